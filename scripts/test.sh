#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test:
#   1. the plain build (what is installed and packaged: delayqd, the CLI, the libraries, the
#      examples, the benchmarks) and the tests of the project as a user meets it on it (the
#      package, README.md and docs/ as typed, the examples copied out, the dashboard in a browser),
#      then a short run of the workload driver that checks every job arrives and none early;
#   2. every GoogleTest suite, under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the suites that exercise threads again, under ThreadSanitizer (scripts/tsan.sh);
#   4. a short fuzzing run of each libFuzzer target (scripts/fuzz.sh: delayqd's request parsing,
#      the journal's record decoder, the Redis reply readers, the schedule rule parser).
# The GoogleTest suites run once, in the build that checks the most (2), rather than also in the
# plain one: the whole script must stay within 40 minutes on a 2-core machine, and building and
# running them in the plain build too took about 9 of those minutes (CI's log of 2026-12-02). A test that skips fails its stage unless
# scripts/allowed_skips.txt allows it there (scripts/check_skips.py).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
# Each stage's time, printed as it ends and again at the end: the whole script must stay within
# 40 minutes on a 2-core machine, and a run that does not says where the time went.
times=()
started=$SECONDS
stage() {  # stage NAME: ends the stage running (if any) and starts NAME
  if [ -n "${stage_name:-}" ]; then
    times+=("$(printf '%5d s  %s' $((SECONDS - stage_start)) "$stage_name")")
    echo "-- ${times[-1]}"
  fi
  stage_name=$1
  stage_start=$SECONDS
  [ -n "$1" ] && echo "== $1 =="
  return 0
}
report_times() {  # on exit, also when a stage failed: the stages' times so far
  local status=$?
  [ -n "${stage_name:-}" ] && stage_name="$stage_name (stopped here)"
  stage ""
  echo "== times =="
  printf '%s\n' "${times[@]}"
  printf '%5d s  in all\n' $((SECONDS - started))
  return $status
}
trap report_times EXIT
# clang: the fuzzers; nginx-light and openssl: docs/production.md's TLS proxy configuration,
# which tests/project/proxy_test.sh runs; chromium, chromium-driver, python3-selenium and a font: the
# dashboard in a real browser (tests/daemon/dashboard_test.py); prometheus: promtool, which checks
# delayqd's /metrics text (tests/daemon/metrics_promtool_test.cc); stunnel4: docs/redis.md's TLS
# sidecar for Redis, which tests/project/redis_tls_test.sh runs.
delayq_install_deps clang libclang-rt-14-dev nginx-light openssl chromium chromium-driver python3-selenium fonts-dejavu-core prometheus stunnel4

stage "build (RelWithDebInfo)"
# The GoogleTest suites run in the next stages, but for one: two of delayqd_connection_test's
# tests set limits on the daemon that a sanitizer's runtime cannot run under, so it runs here too.
delayq_configure build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDELAYQ_GTESTS=delayqd_connection_test
cmake --build build
stage "tests of the project as a user meets it (and delayqd_connection_test)"
ctest --test-dir build --output-on-failure -j2 --output-junit "$PWD/build/junit.xml"
# A test that skips fails the stage unless scripts/allowed_skips.txt says why it may.
python3 scripts/check_skips.py all build/junit.xml

stage "workload smoke run"
./scripts/bench-smoke.sh build

stage "build (ASan + UBSan)"
# Line tables only (-g1): the sanitizers' reports keep their file:line, and the build takes about
# a quarter less CPU than with full debug information. -O1, the level AddressSanitizer's own
# documentation suggests: a third less compile time than -O2 (the daemon's session.cc: 42 s of
# CPU against 64 s), for tests that run a little slower.
delayq_configure build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDELAYQ_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DDELAYQ_GTESTS=ON \
  -DDELAYQ_BUILD_BENCH=OFF -DDELAYQ_BUILD_EXAMPLES=OFF
cmake --build build-asan
stage "every GoogleTest suite, under ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j2 --output-junit "$PWD/build-asan/junit.xml"
python3 scripts/check_skips.py asan build-asan/junit.xml

stage "build and tests (ThreadSanitizer)"
./scripts/tsan.sh build-tsan

stage "fuzzing (request parsing, journal records, Redis replies)"
./scripts/fuzz.sh 90
stage ""
