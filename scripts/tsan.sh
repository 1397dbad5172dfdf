#!/usr/bin/env bash
# Builds the tests that exercise delayq's threads with ThreadSanitizer and runs them (a stage of
# scripts/test.sh): ./scripts/tsan.sh [build dir, default build-tsan]
#
# The tests, and why these:
#   engine_concurrency_test, engine_semantics_test  the engine's shards, waiting consumers (the
#       waiting component's thread), consume() workers, reserve_async
#   waiting_test  the waiting component alone: blocking and async waits, withdrawal, close
#   journal_test, store_test, engine_store_failure_test  the journal's commit pipeline (group
#       commit, sync thread) and the store's restorer threads, on real RocksDB
#   redis_test, conformance_test  the Redis backend's listener and async threads and its
#       connection pool against a real redis-server; the same calls on Redis and over HTTP (the
#       HTTP client over a delayqd of the build too: its pool, reserve_async threads and close())
#   redis_cluster_test  the cluster router's lock-free slot table and node map while slots move
#   http_api_test, delayqd_test, delayqd_redis_test  the daemon's routes with parked pops answered
#       from the backend's threads, and the daemon itself (built with TSan too) under concurrent
#       clients, on the engine, the store and Redis
#   timer_service_test  TimerService, the wheel behind its own thread (schedule and cancel from
#       several threads, callbacks that call back)
#   tiered_store_test  the disk tier: refills under every shard's lock racing pushes, consumers
#       and RocksDB's reads and compactions
#   engine_stats_test  stats() copying changed topics under each shard's lock while pushes run
#   background_test  delayqd's thread for /stats and /metrics: works posted from the test's
#       threads, answers given from it, a drain joining it
#   asio_test  async_reserve: the queue's thread posting to an io_context run on another, the
#       context's shutdown racing the queue's callback
#   store_fault_test, store_disk_test  a failed write failing every call queued on it and the
#       waiting consumers (commit pipeline, sync thread, waiting component) while producers and
#       consumers run; store_corruption_test  opens of damaged stores (restorer threads);
#       clock_step_test  sleeping consumers woken (or not) by wall-clock steps, on real timers.
#       Measured here, each under a minute with its build: 4 to 25 s of run, 3 to 10 s
#       of compiling beside a warm ccache.
#   crash_harness_test  the crash and power-loss harnesses: each worker process runs the load
#       from two threads, a consumer thread that reserves jobs whose push has not returned, and a
#       consume() loop, on RocksDB's flushes and compactions and the store's sync thread, and is
#       killed anywhere. The driver forks each worker with no thread of its own running (its
#       stores run RocksDB's jobs on threads that end with them, tests/crash/driver.h, and it
#       checks before each fork), so that TSan checks the worker as a whole process: a child of a
#       process with several threads runs unchecked under TSan, and dies once it starts a thread
#       ("dup thread with used id" when a parent's thread id is reused). Under TSan the harness
#       runs fewer cycles, each longer: 40 kill cycles and 30 power-loss cycles, each worker
#       running 4 times as long before its kill (crash_harness_test.cc, driver.cc).
#       Measured here on 2026-12-02 with 60 and 40 cycles, on a loaded machine: the kill test
#       112 s, the power-loss test 90 s, the batch check 35 s.
# Left out: single-threaded suites (core, JSON, bad input) and the CLI (one call per process).
#
# Reports: every process writes its reports to $build/tsan-reports/ (the daemons the tests start
# and kill included, whose stderr would be lost); the stage fails if a test fails or any report
# was written. RocksDB, hiredis and libstdc++ are not instrumented: see tests/tsan.supp.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
build=${1:-build-tsan}
tests=(engine_concurrency_test engine_semantics_test journal_test store_test
       engine_store_failure_test redis_test conformance_test redis_cluster_test http_api_test
       delayqd_test delayqd_redis_test timer_service_test waiting_test tiered_store_test
       asio_test engine_stats_test background_test store_fault_test store_disk_test
       store_corruption_test clock_step_test crash_harness_test)
# Line tables only (-g1), as the ASan stage of test.sh: reports keep their file:line. -O1, the
# level ThreadSanitizer's documentation names beside -O2, for a quarter less compile time.
# With the system's linker rather than lld (CMakeLists.txt): lld was not tried under TSan. Every
# program carries std::string whole here (src/pch/tsan_string.cc says why).
delayq_configure "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDELAYQ_TSAN=ON -DDELAYQ_GTESTS=ON \
  -DDELAYQ_UNITY=ON -DDELAYQ_LLD=OFF -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DDELAYQ_BUILD_BENCH=OFF -DDELAYQ_BUILD_EXAMPLES=OFF
cmake --build "$build" --target "${tests[@]}"

reports="$(cd "$build" && pwd)/tsan-reports"
rm -rf "$reports"
mkdir -p "$reports"
# Each test carries its executable's name as a label (tests/CMakeLists.txt).
labels="^($(IFS='|'; echo "${tests[*]}"))\$"
status=0
# history_size=7, the longest: with less, the first access of a report is often lost ("failed to
# restore the stack"), and a suppression cannot match a stack that is not there.
opts="suppressions=$PWD/tests/tsan.supp log_path=$reports/tsan second_deadlock_stack=1 history_size=7"
# Left out of redis_cluster_test: the failover tests (RedisFailover, RedisClusterFailover), which
# kill and promote real servers under load within deadlines; their client threads are the same
# pool and router the other Redis tests here check. Left out of crash_harness_test: the kill
# cycles' self-tests of the schedule checks (CrashHarness.ScheduleChecksCatch*), which test the
# driver's checks, not threads; under TSan the workers' slow cycles seldom leave a schedule whose loss can
# be planted (none in 160 cycles, measured here). The kill test runs the schedule load here. Of
# the conformance suite, the backends whose threads are not checked by a suite of their own here:
# Redis (its listener, pool and async threads) and the HTTP client over a delayqd; the engine's
# and the store's threads are engine_concurrency_test's, journal_test's, store_test's and
# tiered_store_test's. Left out of tiered_store_test: the model tests (TieredModel.*, 88 s here
# under TSan), whose single caller checks answers, not threads; the disk tier's threads racing
# pushes and consumers are TieredRace's and TieredStore's, which run.
TSAN_OPTIONS="$opts ${TSAN_OPTIONS:-}" ctest --test-dir "$build" --output-on-failure -j2 -L "$labels" \
  -E '^((RedisFailover|RedisClusterFailover|TieredModel)\.|CrashHarness\.ScheduleChecksCatch|Backends/Conformance\..*/(Memory|Durable|Tiered|DurableAlways|TieredAlways)( |$))' \
  --output-junit "$(cd "$build" && pwd)/junit.xml" || status=$?
python3 scripts/check_skips.py tsan "$build/junit.xml" || status=1
if compgen -G "$reports/tsan*" >/dev/null; then
  echo "ThreadSanitizer reported (files in $reports):" >&2
  cat "$reports"/tsan* >&2
  status=1
fi
exit "$status"
