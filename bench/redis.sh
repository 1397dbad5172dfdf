#!/usr/bin/env bash
# The Redis backend's benchmarks: starts a private redis-server on a unix socket in a temporary
# directory (no TCP port), runs delayq-bench against it and prints its JSON lines on stdout,
# stops the server. Twice: with appendonly no, then appendonly yes + appendfsync everysec.
#
#   bench/redis.sh                  # build dir: $BUILD or build
#   JOBS=100000 bench/redis.sh      # W1 jobs (default 100000)
#   MODES=no ONLY=W1 bench/redis.sh # one appendonly mode; only the W1 runs (quick before/after)
#   ONLY=i13 bench/redis.sh         # issue 13's two lines, ROUNDS times (default 3), appendonly no
#   ONLY=replicas bench/redis.sh    # W1 with replicas_to_ack 0 and 1, a primary and one replica
#
# ONLY=i13 runs, per round, W1 with 250 000 jobs pushed with push_batch of 100 and W1 with 100 000
# jobs pushed one push() at a time by 4 producer threads, both with 4 consumers and delays over
# 5 s; I13_ARGS adds delayq-bench arguments to both (e.g. the consumers' batching). After each run
# a line "workload":"server" gives what the server spent on it (INFO commandstats and cpu, reset
# before the run); with SLOWLOG=1 it also gives each function's calls and µs per call, from a
# slow log that records every call (which costs the server a little per call).
#
# ONLY=replicas starts a primary on a free loopback TCP port (and the unix socket, for redis-cli)
# and one replica of it (redis-server --replicaof, appendonly no on both), waits until the replica
# is in sync, then runs, ROUNDS times, W1 with 100 000 jobs (JOBS) pushed with push_batch of 100
# and W1 with JOBS jobs pushed one push() at a time by 4 producer threads, both consumed by 4
# consumers as one consume(), each with --replicas-to-ack 0 and then 1
# against the primary over TCP, each followed by its "server" line.
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
rounds=${ROUNDS:-3}
[ "$only" = i13 ] && modes=${MODES:-no}
[ -x "$bench" ] || { echo "build $bench first" >&2; exit 2; }

# dir, start, stop, cli: a private server (its first comment).
# shellcheck source=bench/private_redis.sh
. bench/private_redis.sh

url="unix://$dir/redis.sock"
run() { "$bench" "$@" --redis "$url" 2>/dev/null || echo "{\"failed\":\"$*\"}"; }

# A run, then what the server spent on it (see the top of this file).
measure() {
  cli config resetstat >/dev/null
  if [ "${SLOWLOG:-}" = 1 ]; then
    cli config set slowlog-log-slower-than 0 >/dev/null
    cli config set slowlog-max-len 2000000 >/dev/null
    cli slowlog reset >/dev/null
  fi
  run "$@"
  local stats cpu functions='{}'
  stats=$(cli info commandstats | tr -d '\r' | awk -F'[:=,]' '/^cmdstat_fcall:/ {printf "\"fcall_calls\":%s,\"fcall_usec\":%s,\"fcall_usec_per_call\":%s", $3, $5, $7}')
  cpu=$(cli info cpu | tr -d '\r' | awk -F: '/^used_cpu_(sys|user):/ {printf ",\"%s\":%s", $1, $2}')
  if [ "${SLOWLOG:-}" = 1 ]; then
    functions=$(cli --json slowlog get -1 | jq -c 'map({f: (if .[3][0] == "FCALL" then .[3][1] else .[3][0] end), us: .[2]}) | group_by(.f) |
      map({key: .[0].f, value: {calls: length, usec_per_call: ((map(.us) | add) / length)}}) | from_entries')
    cli config set slowlog-log-slower-than 10000 >/dev/null
    cli slowlog reset >/dev/null
  fi
  echo "{\"peer\":\"redis-server\",\"workload\":\"server\",${stats:-\"fcall_calls\":0}${cpu},\"functions\":$functions}"
}

if [ "$only" = replicas ]; then
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  start --port "$port" --bind 127.0.0.1 --appendonly no
  mkdir -p "$dir/replica"
  redis-server --port 0 --unixsocket "$dir/replica.sock" --unixsocketperm 700 --dir "$dir/replica" \
    --save '' --appendonly no --replicaof 127.0.0.1 "$port" --logfile "$dir/replica.log" \
    --daemonize no &
  replica=$!
  trap 'kill "$replica" 2>/dev/null || true; wait "$replica" 2>/dev/null || true; stop; rm -rf "$dir"' EXIT
  for _ in $(seq 1 500); do
    redis-cli -s "$dir/replica.sock" info replication 2>/dev/null | grep -q '^master_link_status:up' && break
    sleep 0.02
  done
  redis-cli -s "$dir/replica.sock" info replication | grep -q '^master_link_status:up' ||
    { echo "the replica did not sync; log:" >&2; cat "$dir/replica.log" >&2; exit 1; }
  url="redis://127.0.0.1:$port"
  for _ in $(seq 1 "$rounds"); do
    for acks in 0 1; do
      measure --workload W1 --backend redis --jobs "$jobs" --delay-max 5 --consumers 4 --batch 100 \
        --consume 1 --replicas-to-ack "$acks" --time-limit 120
    done
    for acks in 0 1; do
      measure --workload W1 --backend redis --jobs "$jobs" --delay-max 5 --consumers 4 --producers 4 \
        --consume 1 --replicas-to-ack "$acks" --time-limit 120
    done
  done
  echo "{\"peer\":\"redis-server\",\"workload\":\"replication\",\"replica\":$(redis-cli -s "$dir/replica.sock" info replication | tr -d '\r' |
    awk -F: '/^(master_link_status|master_repl_offset):/ {printf "%s\"%s\":\"%s\"", n++ ? "," : "{", $1, $2} END {print "}"}')}"
  exit 0
fi

if [ "$only" = i13 ]; then
  start --appendonly no
  for _ in $(seq 1 "$rounds"); do
    # shellcheck disable=SC2086
    measure --workload W1 --backend redis --jobs 250000 --delay-max 5 --consumers 4 --batch 100 ${I13_ARGS:-}
    # shellcheck disable=SC2086
    measure --workload W1 --backend redis --jobs 100000 --delay-max 5 --consumers 4 --producers 4 ${I13_ARGS:-}
  done
  stop
  exit 0
fi

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
