#!/usr/bin/env bash
# Runs every benchmark behind docs/benchmarks.md on this machine and writes the raw results to
# OUT_DIR (default bench-results/): the micro-benchmarks (JSON + plot) and the W1 / W2 workload
# lines. Build first (./scripts/test.sh or cmake --build build). SECTIONS="micro workloads store"
# (the default) picks what to run; BUILD names the build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
sections=${SECTIONS:-micro workloads store}
want() { [[ " $sections " == *" $1 "* ]]; }
out=${1:-bench-results}
mkdir -p "$out"
{
  echo "# $(date -u +%FT%TZ) $(uname -srm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "# git $(git rev-parse --short HEAD)"
} | tee "$out/machine.txt"

if want micro && [ -x "$build/bench/delayq-micro" ]; then
  "$build/bench/delayq-micro" --benchmark_format=console --benchmark_out_format=json \
    --benchmark_out="$out/micro.json" | tee "$out/micro.txt"
  if command -v gnuplot >/dev/null; then bench/plot_micro.sh "$out/micro.json" "$out/micro.png"; fi
fi

bench="$build/bench/delayq-bench"
if want workloads; then
: >"$out/workloads.jsonl"
run() { "$bench" "$@" 2>/dev/null | tee -a "$out/workloads.jsonl"; }
for i in 1 2 3; do
  "$build/bench/delayq-stall-probe" 5 | tee -a "$out/workloads.jsonl"
  run --workload W1 --backend asio --jobs 100000 --delay-max 5
  run --workload W1 --backend heap --jobs 100000 --delay-max 5
  run --workload W1 --backend memory --jobs 100000 --delay-max 5
  run --workload W1 --backend memory --jobs 100000 --delay-max 5 --batch 100
  run --workload W1 --backend memory --jobs 100000 --delay-max 5 --slack-us 0
  run --workload W2 --jobs 1000000 --delay-max 5
  run --workload W2 --backend heap --jobs 1000000 --delay-max 5
  run --workload W2 --backend asio --jobs 1000000 --delay-max 5
done

fi

want store || exit 0
# The durable store: W1 in each sync mode beside raw RocksDB doing the same writes (a Put per
# push, a Put and a Delete per delivery, at the same moments) with the same sync setting and
# threads, then recovery time and memory at 1 M and 5 M pending jobs.
: >"$out/store.jsonl"
srun() { "$bench" "$@" 2>/dev/null | tee -a "$out/store.jsonl"; }
for pc in "1 2" "16 16"; do
  set -- $pc
  srun --workload W1 --backend rocksdb-raw --sync always --jobs 20000 --delay-max 2 --producers $1 --consumers $2 --time-limit 120
  srun --workload W1 --backend rocksdb --sync always --jobs 20000 --delay-max 2 --producers $1 --consumers $2 --time-limit 120
done
for mode in batch periodic none; do
  for b in 0 100; do
    srun --workload W1 --backend rocksdb-raw --sync $mode --jobs 100000 --delay-max 5 --batch $b
    srun --workload W1 --backend rocksdb --sync $mode --jobs 100000 --delay-max 5 --batch $b
  done
done
srun --workload recovery --jobs 1000000
srun --workload recovery --jobs 5000000
