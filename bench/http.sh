#!/usr/bin/env bash
# The HTTP daemon's benchmarks: starts delayqd from the build directory on a free loopback port,
# drives it with delayq-http-bench (push, pop-finish, W1) over 1, 4 and 16 keep-alive
# connections, and stops it; prints the JSON lines on stdout (notes on stderr).
#
#   bench/http.sh                        # build dir: $BUILD or build-hbench
#   ROUNDS=1 JOBS=10000 bench/http.sh    # fewer rounds, fewer jobs
#
# Backends: the embedded store with --sync none and --sync always (a fresh temporary store for
# every run), and --redis against a private redis-server on a unix socket (flushed between runs).
# JOBS (default 20000) jobs per run, JOBS_ALWAYS (default 2000) with --sync always, whose every
# change waits for an fsync; W1 delays up to DELAY_MAX (default 5) s.
#
# Baselines, in the same script so that they share the machine's state:
# - the same client on GET /health of the same daemon: the HTTP floor (a route with no queue
#   behind it), and wrk on the same route (installed from Debian if missing) to show whether the
#   client is the bottleneck;
# - delayq-bench's W1 on the same backends in-process (no HTTP), for the cost of the HTTP layer.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-hbench}
rounds=${ROUNDS:-3}
jobs=${JOBS:-20000}
jobs_always=${JOBS_ALWAYS:-2000}
delay_max=${DELAY_MAX:-5}
delayqd="$build/src/delayqd/delayqd"
client="$build/bench/delayq-http-bench"
bench="$build/bench/delayq-bench"
for b in "$delayqd" "$client" "$bench"; do
  [ -x "$b" ] || {
    echo "build $b first: ninja -C $build delayqd delayq-http-bench delayq-bench" >&2
    exit 2
  }
done

# dir, and start / stop of the private redis-server in it (its first comment).
# shellcheck source=bench/private_redis.sh
. bench/private_redis.sh
dpid='' port=''
stop_daemon() {
  if [ -n "$dpid" ]; then
    kill -TERM "$dpid" 2>/dev/null || true
    wait "$dpid" 2>/dev/null || true
  fi
  dpid=
}
trap 'stop_daemon; stop; rm -rf "$dir"' EXIT

# start_daemon ARGS...: delayqd on 127.0.0.1, port 0 (the kernel picks a free one); the daemon
# prints the address it got on stdout, alone on its line.
start_daemon() {
  : >"$dir/addr"
  "$delayqd" --listen 127.0.0.1:0 "$@" >"$dir/addr" 2>>"$dir/delayqd.log" &
  dpid=$!
  for _ in $(seq 1 1200); do
    grep -q 'listening on' "$dir/addr" && break
    kill -0 "$dpid" 2>/dev/null || break
    sleep 0.05
  done
  port=$(sed -n 's/^delayqd: listening on .*:\([0-9]*\)$/\1/p' "$dir/addr")
  if [ -z "$port" ]; then
    echo "delayqd did not start; log:" >&2
    cat "$dir/delayqd.log" >&2
    exit 1
  fi
}

# A fresh daemon per run, so that no run sees the jobs or the store size left by another.
# backend: none | always | redis.
start_backend() {
  case $1 in
    redis)
      cli flushall >/dev/null
      start_daemon --redis "unix://$dir/redis.sock" ;;
    *)
      rm -rf "$dir/store"
      start_daemon --store "$dir/store" --sync "$1" ;;
  esac
}

# run ARGS...: one client run against the current daemon; a failed run still leaves a line.
run() {
  "$client" --port "$port" "$@" || echo "{\"failed\":\"delayq-http-bench $*\"}"
}

# wrk C: GET /health for 10 s over C connections, as one JSON line (latencies in ms).
wrk_health() {
  local c=$1 t=$(( $1 < 2 ? 1 : 2 ))
  wrk -t"$t" -c"$c" -d10s --latency "http://127.0.0.1:$port/health" 2>/dev/null |
    awk -v c="$c" -v t="$t" '
      function ms(v) {
        if (v ~ /us$/) return substr(v, 1, length(v) - 2) / 1000
        if (v ~ /ms$/) return substr(v, 1, length(v) - 2) + 0
        if (v ~ /s$/) return substr(v, 1, length(v) - 1) * 1000
        return v
      }
      $1 == "50%" { p50 = ms($2) }
      $1 == "99%" { p99 = ms($2) }
      $1 == "Latency" && $2 !~ /Distribution/ { max = ms($4) }
      $1 == "Requests/sec:" { rps = $2 }
      / requests in / { n = $1 }
      END {
        printf "{\"peer\":\"wrk\",\"workload\":\"http-health\",\"requests\":%s,", n
        printf "\"requests_per_s\":%s,\"latency_ms\":", rps
        printf "{\"p50\":%s,\"p99\":%s,\"max\":%s},", p50, p99, max
        printf "\"params\":{\"connections\":%s,\"threads\":%s,\"duration_s\":10}}\n", c, t
      }'
}

have_wrk=1
if ! command -v wrk >/dev/null; then
  # Allowed to fail (no root, no network): the /health figures of our own client remain.
  if [ "$(id -u)" = 0 ]; then
    { apt-get install -y wrk || { apt-get update && apt-get install -y wrk; }; } >&2 || true
  fi
  command -v wrk >/dev/null || { have_wrk=0; echo "wrk is not installed: skipping it" >&2; }
fi

commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')
echo "# $(date -u +%FT%TZ) $(uname -srm), $(nproc) cores, git $commit" >&2
start --appendonly no
for round in $(seq 1 "$rounds"); do
  echo "# round $round of $rounds" >&2
  # The HTTP floor: the same client and daemon, a route that does not touch the queue.
  start_backend none
  for c in 1 4 16; do
    run --workload health --jobs 100000 --connections "$c" --seed "$round" --param round="$round"
    if [ "$have_wrk" = 1 ]; then wrk_health "$c"; fi
  done
  stop_daemon

  for backend in none always redis; do
    n=$jobs
    [ "$backend" = always ] && n=$jobs_always
    if [ "$backend" = redis ]; then
      tags=(--peer delayqd-redis --param backend=redis --param appendonly=no)
    else
      tags=(--peer delayqd-store --param backend=store --param sync="$backend")
    fi
    tags+=(--seed "$round" --param round="$round")
    for c in 1 4 16; do
      start_backend "$backend"
      run --workload push --jobs "$n" --connections "$c" --delay 0 "${tags[@]}"
      stop_daemon
      start_backend "$backend"
      run --workload push --jobs "$n" --connections "$c" --delay 60 "${tags[@]}"
      stop_daemon
      start_backend "$backend"
      run --workload pop-finish --jobs "$n" --connections "$c" "${tags[@]}"
      stop_daemon
      start_backend "$backend"
      run --workload W1 --jobs "$n" --connections "$c" --delay-max "$delay_max" "${tags[@]}"
      stop_daemon
    done
  done

  # The same backends in-process: delayq-bench's W1 (one producer thread, 2 consumers) pushes
  # through the Queue interface directly, no HTTP.
  "$bench" --workload W1 --backend rocksdb --sync none --jobs "$jobs" --delay-max "$delay_max" \
    2>/dev/null || echo '{"failed":"delayq-bench rocksdb none"}'
  "$bench" --workload W1 --backend rocksdb --sync always --jobs "$jobs_always" \
    --delay-max "$delay_max" --time-limit 120 2>/dev/null ||
    echo '{"failed":"delayq-bench rocksdb always"}'
  "$bench" --workload W1 --backend redis --redis "unix://$dir/redis.sock" --jobs "$jobs" \
    --delay-max "$delay_max" 2>/dev/null || echo '{"failed":"delayq-bench redis"}'
done
