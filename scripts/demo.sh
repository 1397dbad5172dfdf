#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main demo: unpaid orders closed after 30 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
delayq_install_deps
delayq_configure build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build --target order_timeout
./build/examples/order_timeout/order_timeout "$@"
