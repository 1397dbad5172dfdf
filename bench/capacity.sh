#!/usr/bin/env bash
# The capacity figures of docs/benchmarks.md ("Capacity: far-future jobs on disk"): the durable
# store with its disk tier at 10 M, 50 M and 100 M pending jobs, beside the store without it
# (--horizon-s 0: every job in memory) at the sizes this machine holds, in one run; single
# pushes (one push() each) at SINGLE_JOBS (default 1 M) with and without the tier; then the
# disk tier's bytes per pending job while CHURN_JOBS (default 1 M) jobs turn over, 60 rounds of
# half a day (the disk-churn workload: about five turnovers). Each run is one JSON line on
# stdout (and in OUT_DIR/capacity.jsonl). Needs the machine to itself, about 15 GiB of free disk
# under DIR and 35 minutes.
# Usage: bench/capacity.sh [DIR] [SIZES...]
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
  "$bench" --dir "$dir" --sync batch --batch 100 "$@" 2>/dev/null | tee -a "$out/capacity.jsonl"
  rm -rf "$dir"
}
for n in ${sizes[@]}; do
  run --workload capacity --jobs "$n"
  # All in memory: about 300 bytes a job, so up to 50 M on this 24 GiB machine.
  if [ "$n" -le "${MEMORY_MAX:-50000000}" ]; then run --workload capacity --jobs "$n" --horizon-s 0; fi
done
single=${SINGLE_JOBS:-1000000}
run --workload capacity --jobs "$single" --batch 0
run --workload capacity --jobs "$single" --batch 0 --horizon-s 0
run --workload disk-churn --jobs "${CHURN_JOBS:-1000000}" --rounds 60
