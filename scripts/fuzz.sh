#!/usr/bin/env bash
# Builds the libFuzzer target for delayqd's request parsing and routing with clang, and runs it
# for a while (default 20 s): ./scripts/fuzz.sh [seconds]
# Needs the Debian packages clang and libclang-rt-14-dev (libFuzzer and the sanitizer runtimes)
# besides the usual build dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
build=${DELAYQ_FUZZ_BUILD:-build-fuzz}
if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found: apt-get install clang libclang-rt-14-dev" >&2
  exit 1
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDELAYQ_FUZZ=ON -DDELAYQ_BUILD_TESTS=OFF -DDELAYQ_BUILD_BENCH=OFF -DDELAYQ_BUILD_EXAMPLES=OFF \
  >/dev/null
ninja -C "$build" delayqd_fuzz
corpus="$build/fuzz-corpus"
mkdir -p "$corpus"
# Seeds: one valid request per route family (first byte picks the route, see fuzz_request.cc).
printf '\x00{"topic":"t","id":"a","delay":1,"ttr":5,"body":"b","retry":{"kind":"list","delays":[1,2]}}' >"$corpus/push"
printf '\x01{"jobs":[{"topic":"t"},{"topic":"u","delay_ms":5}]}' >"$corpus/batch"
printf '\x02{"topic":"t,u","timeout":0}' >"$corpus/pop"
printf '\x03{"id":"a","token":"1:a"}' >"$corpus/finish"
printf '\x05{"id":"a","delay_ms":3}' >"$corpus/nack"
printf '\x09{"id":"a"}' >"$corpus/get"
printf '\x0a{"id":"a","due_at_ms":1700000000000}' >"$corpus/reschedule"
printf '\x0c{"topic":"t","limit":5}' >"$corpus/dead"
"$build/src/delayqd/delayqd_fuzz" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
  -print_final_stats=1 "$corpus"
