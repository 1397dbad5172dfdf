#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (every library instrumented, ASan + UBSan,
# any undefined behaviour stops the run) and runs each from its committed seed corpus
# (tests/fuzz/<target>/) for a share of the given time: ./scripts/fuzz.sh [seconds, default 90]
# (90 s: 36 + 18 + 18 + 18).
#   delayqd_fuzz         delayqd's request parsing and routing
#   journal_record_fuzz  the journal's record and totals decoders, then Core::restore()
#   redis_reply_fuzz     RESP through hiredis, then our reading of script and CLUSTER SLOTS replies
#   cron_fuzz            a schedule's rule (cron, macros, "every") in a zone, then its occurrences
# New inputs go to $build/fuzz-corpus/<target>/ (kept between runs); a crash leaves its input in
# $build/fuzz-artifacts/ and fails the script. A crash is a bug: fix it, add a regression test,
# and add the input to the target's seed corpus.
# Needs the Debian packages clang and libclang-rt-14-dev (libFuzzer and the sanitizer runtimes)
# besides the usual build dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-90}
build=${DELAYQ_FUZZ_BUILD:-build-fuzz}
if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found: apt-get install clang libclang-rt-14-dev" >&2
  exit 1
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# -O1 -g1, as the ASan stage of test.sh: the sanitizers' reports keep their file:line, and every
# library compiles again here, so its compile time counts.
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" "${launcher[@]}" -DDELAYQ_FUZZ=ON -DDELAYQ_BUILD_TESTS=OFF -DDELAYQ_BUILD_BENCH=OFF \
  -DDELAYQ_BUILD_EXAMPLES=OFF >/dev/null
ninja -C "$build" delayqd_fuzz journal_record_fuzz redis_reply_fuzz cron_fuzz

# Large requests, generated here rather than committed: the daemon reads bodies up to 4 MiB, and
# what goes wrong with size (deep nesting, long arrays, many members, long escaped strings) shows
# well before that. First byte: the route (see fuzz_request.cc); 0x00 is /push, 0x01 /push_batch.
generated="$build/fuzz-generated/delayqd_fuzz"
mkdir -p "$generated"
python3 - "$generated" <<'PY'
import json, os, sys
d = sys.argv[1]
def put(name, route, body):
    with open(os.path.join(d, name), "wb") as f:
        f.write(bytes([route]) + body.encode())
put("deep-nesting", 0, '{"topic":"t","body":' + "[" * 100000 + "]" * 100000 + "}")
put("long-array", 0, '{"topic":"t","retry":{"kind":"list","delays":[' + ",".join(["1"] * 60000) + "]}}")
put("many-members", 0, "{" + ",".join('"k%d":%d' % (i, i) for i in range(12000)) + ',"topic":"t"}')
put("long-escaped-body", 0, json.dumps({"topic": "t", "body": "\u00e9\"\\\n" * 20000}))
put("big-batch", 1, json.dumps({"jobs": [{"topic": "t%d" % (i % 7), "delay_ms": i} for i in range(7000)]}))
PY

# -max_len: requests up to 256 KiB reach every size the parser treats specially (the generated
# inputs above) while keeping each run fast enough for tens of thousands of executions; records
# and replies have a few dozen bytes of structure plus strings whose lengths are checked against
# what is left, so 16 KiB covers them; a rule is a line of text, 1 KiB is plenty.
# The first directory given is where libFuzzer writes what it finds: $corpus, not the seeds.
# Every target runs even when one fails; the script fails at the end, naming them.
failed=()
run() {  # run TARGET SECONDS MAX_LEN [libFuzzer flags and more seed directories...]
  local target=$1 secs=$2 max_len=$3
  shift 3
  local corpus="$build/fuzz-corpus/$target"
  mkdir -p "$corpus" "$artifacts"
  echo "== $target: ${secs}s =="
  "$build/tests/fuzz/$target" -max_total_time="$secs" -max_len="$max_len" -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$target-" "$corpus" "tests/fuzz/$target" \
    "$@" || failed+=("$target")
}
artifacts="$build/fuzz-artifacts"
part() { echo $((seconds * $1 / 20)); }  # in twentieths, so that 90 s gives 36 + 18 + 18 + 18
run delayqd_fuzz "$(part 8)" 262144 -dict=tests/fuzz/delayqd.dict "$generated"
run journal_record_fuzz "$(part 4)" 16384
run redis_reply_fuzz "$(part 4)" 16384 -dict=tests/fuzz/redis_reply.dict
run cron_fuzz "$(part 4)" 1024 -dict=tests/fuzz/cron.dict
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: ${failed[*]} stopped on a crash, a sanitizer report or a timeout; the inputs" \
    "are in $artifacts (reproduce: $build/tests/fuzz/<target> <input>)" >&2
  exit 1
fi
