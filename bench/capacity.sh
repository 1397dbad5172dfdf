#!/usr/bin/env bash
# The capacity figures of docs/benchmarks.md ("Capacity: far-future jobs on disk"): the durable
# store with its disk tier at 10 M, 50 M and 100 M pending jobs, beside the store without it
# (--horizon-s 0: every job in memory) at the sizes this machine holds, in one run. Each run is
# one JSON line on stdout (and in OUT_DIR/capacity.jsonl). Needs the machine to itself, about
# 15 GiB of free disk under DIR and an hour. Usage: bench/capacity.sh [DIR] [SIZES...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
dir=${1:-/var/tmp/delayq-capacity}
shift || true
sizes=("${@:-10000000 50000000 100000000}")
out=${OUT_DIR:-bench-results}
mkdir -p "$out"
bench="$build/bench/delayq-bench"
run() {
  rm -rf "$dir"
  "$bench" --workload capacity --dir "$dir" --sync batch --batch 100 "$@" 2>/dev/null |
    tee -a "$out/capacity.jsonl"
  rm -rf "$dir"
}
for n in ${sizes[@]}; do
  run --jobs "$n"
  # All in memory: about 290 bytes a job, so up to 50 M on this 24 GiB machine.
  if [ "$n" -le "${MEMORY_MAX:-50000000}" ]; then run --jobs "$n" --horizon-s 0; fi
done
