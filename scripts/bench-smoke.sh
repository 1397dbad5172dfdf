#!/usr/bin/env bash
# A short W1 and W2 run: fails unless every job was received, none twice and none early.
# Speed is not checked here (see docs/benchmarks.md): only correctness of the driver's runs.
set -euo pipefail
build=${1:-build}
bench="$build/bench/delayq-bench"
check() {  # check JSON_LINE: received == jobs, duplicates == 0, lateness min >= 0
  python3 - "$1" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
ok = True
if r["workload"] == "W1":
    ok = r["received"] == r["jobs"] and r.get("duplicates", 0) == 0 and r["lateness_ms"]["min"] >= 0
else:
    ok = r["fired"] + r["cancelled"] == r["jobs"] and r["lateness_ms"]["min"] >= 0
print(("ok   " if ok else "FAIL ") + sys.argv[1])
sys.exit(0 if ok else 1)
PY
}
check "$("$bench" --workload W1 --jobs 20000 --delay-max 1 2>/dev/null)"
check "$("$bench" --workload W1 --jobs 20000 --delay-max 1 --shards 2 --batch 100 2>/dev/null)"
check "$("$bench" --workload W1 --backend rocksdb --sync always --jobs 2000 --delay-max 1 --producers 4 --consumers 4 2>/dev/null)"
check "$("$bench" --workload W1 --backend rocksdb --sync batch --jobs 20000 --delay-max 1 --batch 100 2>/dev/null)"
check "$("$bench" --workload W2 --jobs 200000 --delay-max 1 2>/dev/null)"
# The baselines of issue 13: the heap scheduler (W1, W2) and Asio timers (W2).
check "$("$bench" --workload W1 --backend heap --jobs 20000 --delay-max 1 2>/dev/null)"
check "$("$bench" --workload W2 --backend heap --jobs 200000 --delay-max 1 2>/dev/null)"
check "$("$bench" --workload W2 --backend asio --jobs 200000 --delay-max 1 2>/dev/null)"
# A number out of its range is refused before anything runs: exit code 2, the flag named.
refused() {  # refused FLAG VALUE
  local err rc=0
  err=$("$bench" --workload W1 --backend redis --redis unix:///nonexistent "$1" "$2" 2>&1 >/dev/null) || rc=$?
  if [ "$rc" = 2 ] && grep -q -- "bad value for $1" <<<"$err"; then
    echo "ok   refused $1 $2"
  else
    echo "FAIL $1 $2: exit $rc, $err"
    exit 1
  fi
}
refused --replicas-to-ack 17
refused --replicas-to-ack -1
