#!/usr/bin/env bash
# delayq beside BullMQ on one private redis-server (unix socket, appendonly no), in one run:
# W1 on delayq's Redis backend (push_batch of 100, 4 consumers as one consume(), delays over
# 5 s) and the same shape on BullMQ (bench/bullmq/w1.js: addBulk of 100, 4 worker processes),
# ROUNDS times (default 1), delayq first in each round, each on a server started afresh. Prints
# each run's JSON line, after each a "server" line (what the server spent on it, below), and a
# "ratio" line per round: delayq's jobs/s end to end (received / end_to_end_s) over BullMQ's.
#
#   bench/bullmq_compare.sh                          # build dir: $BUILD or build
#   JOBS=100000 CONCURRENCY=50 ROUNDS=1 TIME_LIMIT=120 bench/bullmq_compare.sh
#
# CONCURRENCY is each BullMQ worker's concurrency (default 50: of 1, 10 and 50 tried on this
# machine, the one that gave BullMQ the most jobs/s end to end; docs/benchmarks.md has the figures). BullMQ and its Redis client are
# installed with npm, as bench/bullmq/package.json pins them, into BULLMQ_CACHE (default
# ~/.cache/delayq-bullmq), outside the repo, when they are not there yet: a benchmark only, which
# no test runs.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
bench="$build/bench/delayq-bench"
jobs=${JOBS:-100000}
rounds=${ROUNDS:-1}
concurrency=${CONCURRENCY:-50}
limit=${TIME_LIMIT:-120}  # seconds from the first push; a run that has not received every job by then stops
cache=${BULLMQ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/delayq-bullmq}
[ -x "$bench" ] || { echo "build $bench first" >&2; exit 2; }
for tool in node npm jq; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 2; }
done

# The node packages, installed again whenever package.json changed.
mkdir -p "$cache"
if ! cmp -s bench/bullmq/package.json "$cache/package.json" || [ ! -d "$cache/node_modules/bullmq" ]; then
  cp bench/bullmq/package.json "$cache/package.json"
  (cd "$cache" && npm install --no-audit --no-fund --loglevel=error >&2)
fi

# dir, start, stop, cli: a private server (its first comment).
# shellcheck source=bench/private_redis.sh
. bench/private_redis.sh

# What the server spent on a run of `jobs` jobs, as one line, per job: the scripts' usec from
# INFO commandstats (BullMQ's run as EVALSHA, delayq's as FCALL; a script's time includes the
# commands it runs), the server's CPU time (INFO cpu), and each command that took at least 1% of
# the scripts' time (commandstats counts the commands a script runs as well as the script, so
# these overlap the scripts' figure).
server_line() {  # PEER
  local stats cpu
  stats=$(cli info commandstats | tr -d '\r' | awk -F'[:=,]' -v jobs="$jobs" '
    /^cmdstat_/ {
      name = substr($1, 9); calls[name] = $3; usec[name] = $5
      if (name ~ /^(fcall|fcall_ro|eval|evalsha|eval_ro|evalsha_ro)$/) { scalls += $3; susec += $5 }
    }
    END {
      printf "\"script_calls\":%d,\"script_usec_per_job\":%.2f,\"by_command\":{", scalls, susec / jobs
      n = 0
      for (c in usec) if (usec[c] >= susec / 100)
        printf "%s\"%s\":{\"calls\":%d,\"usec_per_job\":%.2f}", (n++ ? "," : ""), c, calls[c], usec[c] / jobs
      printf "}"
    }')
  cpu=$(cli info cpu | tr -d '\r' | awk -F: -v jobs="$jobs" '
    /^used_cpu_(sys|user):/ { s += $2 } END { printf "\"cpu_usec_per_job\":%.2f", s * 1e6 / jobs }')
  echo "{\"peer\":\"$1\",\"workload\":\"server\",\"jobs\":$jobs,$stats,$cpu}"
}
# A server started afresh for each run: INFO cpu counts from the server's start (CONFIG RESETSTAT
# does not reset it), so that each "server" line has its run's CPU time alone.
restart() { stop; start --appendonly no; }

for _ in $(seq 1 "$rounds"); do
  restart
  dq=$("$bench" --workload W1 --backend redis --redis "unix://$dir/redis.sock" --jobs "$jobs" \
         --delay-max 5 --consumers 4 --batch 100 --consume 1 --time-limit "$limit" 2>/dev/null) ||
    true  # a run past its time limit still prints its line (received < jobs)
  [ -n "$dq" ] || dq="{\"failed\":\"delayq W1\"}"
  echo "$dq"
  server_line delayq-redis
  restart
  bq=$(NODE_PATH="$cache/node_modules" node bench/bullmq/w1.js --redis "$dir/redis.sock" \
         --jobs "$jobs" --delay-max 5 --workers 4 --concurrency "$concurrency" --batch 100 \
         --time-limit "$limit") || true
  [ -n "$bq" ] || bq="{\"failed\":\"bullmq W1\"}"
  echo "$bq"
  server_line bullmq
  jq -cn --argjson d "$dq" --argjson b "$bq" '{workload: "ratio",
    delayq_jobs_per_s: ($d.received / $d.end_to_end_s), bullmq_jobs_per_s: $b.jobs_per_s,
    delayq_over_bullmq: (($d.received / $d.end_to_end_s) / $b.jobs_per_s),
    all_received: ($d.received == $d.jobs and $b.received == $b.jobs)}' 2>/dev/null ||
    echo '{"workload":"ratio","failed":"a run failed"}'
done
