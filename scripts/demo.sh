#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main demo: unpaid orders closed by their timeout,
# on the durable store (./demo-data/orders), with the worker killed (kill -9) half-way and nothing
# lost. The same story on a ManualClock, 45 minutes in milliseconds: ./build/examples/order_timeout/order_timeout
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
delayq_install_deps
delayq_configure build -DCMAKE_BUILD_TYPE=RelWithDebInfo
# Also the daemon and the CLI, so that the README's next commands (cmake --install, delayqd,
# delayq) work right after this one.
cmake --build build --target order_timeout_durable order_timeout delayqd delayq_cli
./build/examples/order_timeout/order_timeout_durable "$@"
