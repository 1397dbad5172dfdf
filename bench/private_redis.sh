# shellcheck shell=bash
# A private redis-server for the benchmark scripts (bench/redis.sh, bench/http.sh,
# bench/bullmq_compare.sh):
# sourced, not run. It listens on a unix socket in a fresh temporary directory (no TCP port
# unless the caller adds one), saves nothing, and is stopped and its directory removed when the
# script exits.
#   dir    the directory (the socket is $dir/redis.sock, the log $dir/redis.log)
#   start  [redis-server arguments]: starts it, waits until it answers; pid is its process
#   stop   stops it (and waits for it to exit)
#   cli    redis-cli on its socket
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

cli() { redis-cli -s "$dir/redis.sock" "$@"; }
