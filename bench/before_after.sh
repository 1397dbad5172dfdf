#!/usr/bin/env bash
# Before and after a change, in one run: builds delayq-bench at REV (a git worktree in
# $OUT/before-src, built in $OUT/before-build) beside this tree's build, then runs the same
# workloads with each binary in turn, ROUNDS times (default 3), so that both see the same
# machine. Prints one JSON line per run, tagged "build":"before"|"after", into $OUT/runs.jsonl,
# then a table of medians and after/before ratios (bench/before_after.py).
#   bench/before_after.sh REV [OUT, default bench-results/before-after]
# WORKLOADS (one delayq-bench argument list per line) replaces the default workloads below.
# BEFORE_BIN: a delayq-bench already built at REV (e.g. from this tree with the change set
# aside), used instead of building one in $OUT; REV then only names it in machine.txt.
# Needs a quiet machine: the ratios mean something only when nothing else runs.
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: bench/before_after.sh REV [OUT]}
out=${2:-bench-results/before-after}
rounds=${ROUNDS:-3}
after_build=${BUILD:-build}
mkdir -p "$out"
out=$(cd "$out" && pwd)
before_bin=${BEFORE_BIN:-}
if [ -z "$before_bin" ]; then
  src="$out/before-src"
  if [ ! -d "$src" ]; then git worktree add --detach "$src" "$rev" >/dev/null; fi
  git -C "$src" checkout -q --detach "$rev"
  cmake -S "$src" -B "$out/before-build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DDELAYQ_BUILD_TESTS=OFF -DDELAYQ_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$out/before-build" --target delayq-bench
  before_bin="$out/before-build/bench/delayq-bench"
fi
cmake --build "$after_build" --target delayq-bench
{
  echo "# $(date -u +%FT%TZ) $(uname -srm), $(nproc) cores"
  echo "# before $(git rev-parse --short "$rev")${BEFORE_BIN:+ (prebuilt: $BEFORE_BIN)}, after $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src bench || echo ' with uncommitted changes')"
} | tee "$out/machine.txt"

: >"$out/runs.jsonl"
# The workloads: the in-memory engine (W1, single pushes and push_batch), the durable store in
# batch sync (single pushes and push_batch), and recovery of 1 M jobs.
workloads=(
  "--workload W1 --backend memory --jobs 100000 --delay-max 5"
  "--workload W1 --backend memory --jobs 100000 --delay-max 5 --batch 100"
  "--workload W1 --backend rocksdb --sync batch --jobs 100000 --delay-max 5"
  "--workload W1 --backend rocksdb --sync batch --jobs 100000 --delay-max 5 --batch 100"
  "--workload recovery --jobs 1000000"
)
if [ -n "${WORKLOADS:-}" ]; then mapfile -t workloads <<<"$WORKLOADS"; fi
for ((i = 1; i <= rounds; ++i)); do
  for w in "${workloads[@]}"; do
    for side in before after; do
      bin="$before_bin"
      [ "$side" = after ] && bin="$after_build/bench/delayq-bench"
      # shellcheck disable=SC2086
      "$bin" $w 2>/dev/null | while IFS= read -r line; do
        printf '{"build":"%s","args":"%s",%s\n' "$side" "$w" "${line#\{}"
      done | tee -a "$out/runs.jsonl" || echo "# the run above was not whole: $side $w" >&2
    done
  done
done
python3 bench/before_after.py "$out/runs.jsonl" | tee "$out/table.md"
