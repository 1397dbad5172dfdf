#!/usr/bin/env bash
# The scripts reuse a build directory that a user configured by hand: `cmake -S . -B build`
# (CMake's default generator, Unix Makefiles) and then ./scripts/demo.sh or test.sh, which
# configure the same directory, must not fail with "Does not match the generator used
# previously". Usage: scripts_test.sh SOURCE_DIR
set -euo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$src"
opts=(-DDELAYQ_BUILD_TESTS=OFF -DDELAYQ_BUILD_BENCH=OFF -DDELAYQ_BUILD_EXAMPLES=OFF)
cmake -S . -B "$tmp/by-hand" -G "Unix Makefiles" "${opts[@]}" >/dev/null
source scripts/deps.sh
delayq_configure "$tmp/by-hand" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${opts[@]}"
grep -q '^CMAKE_GENERATOR:INTERNAL=Unix Makefiles$' "$tmp/by-hand/CMakeCache.txt"
# A fresh directory still gets Ninja.
delayq_configure "$tmp/fresh" "${opts[@]}"
grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$tmp/fresh/CMakeCache.txt"
echo "ok: delayq_configure reuses a hand-configured build directory and picks Ninja for a new one"
