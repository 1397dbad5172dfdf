#!/usr/bin/env bash
# The Redis backend's benchmarks: starts a private redis-server on a unix socket in a temporary
# directory (no TCP port), runs delayq-bench against it and prints its JSON lines on stdout,
# stops the server. Twice: with appendonly no, then appendonly yes + appendfsync everysec.
#
#   bench/redis.sh                  # build dir: $BUILD or build
#   JOBS=100000 bench/redis.sh      # W1 jobs (default 100000)
#   MODES=no ONLY=W1 bench/redis.sh # one appendonly mode; only the W1 runs (quick before/after)
#
# Per configuration: W1 with 1 and 4 consumers (one push() per job, one job per claim), the
# same with push_batch of 100 and claim_batch 32, redis-memory, wheel-vs-zset, and redis-benchmark's own ZADD and ZPOPMIN
# figures as a baseline (one JSON line, requests per second, no pipelining, 1 client).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
bench="$build/bench/delayq-bench"
jobs=${JOBS:-100000}
modes=${MODES:-no everysec}
only=${ONLY:-}
[ -x "$bench" ] || { echo "build $bench first" >&2; exit 2; }

dir=$(mktemp -d /tmp/delayq-redis-bench-XXXXXX)
pid=
stop() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  pid=
}
trap 'stop; rm -rf "$dir"' EXIT

start() {  # extra redis-server arguments
  rm -f "$dir"/*.aof "$dir"/appendonlydir -r 2>/dev/null || true
  redis-server --port 0 --unixsocket "$dir/redis.sock" --unixsocketperm 700 --dir "$dir" \
    --save '' --maxmemory-policy noeviction --logfile "$dir/redis.log" --daemonize no "$@" &
  pid=$!
  for _ in $(seq 1 500); do
    redis-cli -s "$dir/redis.sock" ping >/dev/null 2>&1 && return 0
    sleep 0.02
  done
  echo "redis-server did not start; log:" >&2
  cat "$dir/redis.log" >&2
  exit 1
}

url="unix://$dir/redis.sock"
run() { "$bench" "$@" --redis "$url" 2>/dev/null || echo "{\"failed\":\"$*\"}"; }

for mode in $modes; do
  if [ "$mode" = no ]; then start --appendonly no; else start --appendonly yes --appendfsync everysec; fi
  run --workload W1 --backend redis --jobs "$jobs" --delay-max 5 --consumers 1
  run --workload W1 --backend redis --jobs "$jobs" --delay-max 5 --consumers 4
  run --workload W1 --backend redis --jobs "$jobs" --delay-max 5 --consumers 1 --batch 100 --claim-batch 32
  run --workload W1 --backend redis --jobs "$jobs" --delay-max 5 --consumers 4 --batch 100 --claim-batch 32
  if [ "$only" = W1 ]; then stop; continue; fi
  run --workload redis-memory --jobs 100000
  run --workload wheel-vs-zset --jobs 20000
  # The server's own figures for the two commands a plain ZSET delay queue would use.
  redis-benchmark -s "$dir/redis.sock" -c 1 -n 100000 -r 100000 --csv \
      ZADD bench:z __rand_int__ m:__rand_int__ 2>/dev/null | tail -1 |
    awk -F'"' -v m="$mode" '{printf "{\"peer\":\"redis-benchmark\",\"workload\":\"ZADD\",\"rps\":%s,\"params\":{\"clients\":1,\"pipeline\":1,\"appendfsync\":\"%s\"}}\n", $4, m}'
  redis-benchmark -s "$dir/redis.sock" -c 1 -n 100000 --csv ZPOPMIN bench:z 2>/dev/null | tail -1 |
    awk -F'"' -v m="$mode" '{printf "{\"peer\":\"redis-benchmark\",\"workload\":\"ZPOPMIN\",\"rps\":%s,\"params\":{\"clients\":1,\"pipeline\":1,\"appendfsync\":\"%s\"}}\n", $4, m}'
  stop
done
