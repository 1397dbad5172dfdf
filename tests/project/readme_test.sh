#!/usr/bin/env bash
# README.md, as typed: after the Quick start (a built `build/`), every ```sh block of the README
# runs, in order, in a scratch directory whose `build` is this build; the ```cpp example is built
# as an outside project with the README's ```cmake block against the tree the README's install
# command made, and run; its output must be what the README says it prints.
# The blocks run exactly as written, nothing added between their lines: a block that starts the
# daemon in the background waits for it itself (`delayq ... wait`), as it must when pasted into
# a terminal. One liberty, mechanical: the install prefix /opt/delayq becomes a scratch
# directory.
# Usage: readme_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "$2" && pwd)
tmp=$(mktemp -d)
cleanup() {
  jobs -p | xargs -r kill 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
prefix=$tmp/prefix

# block LANG N: the Nth (from 1) fenced block of README.md whose info string is LANG.
block() {
  awk -v lang="$1" -v want="$2" '
    /^```/ { if (inside) { inside = 0; next } if ($0 == "```" lang) { n++; if (n == want) inside = 1 } next }
    inside { print }' "$src/README.md"
}

mkdir -p "$tmp/work" "$tmp/app"
ln -s "$build" "$tmp/work/build"
cd "$tmp/work"

# A block that starts the daemon in the background waits for it before calling it (the check
# tests/project/docs_test.py makes on docs/), so that it works when pasted.
python3 - "$src/README.md" "$here" <<'EOF'
import sys
sys.path.insert(0, sys.argv[2])
import docs_test
problems = [p for info, start, text in docs_test.blocks(sys.argv[1]) if info == "sh"
            for p in docs_test.check_waits("README.md", start, text)]
if problems:
    sys.exit("\n".join(problems))
EOF

# The ```sh blocks, in order.
n=1
while :; do
  text=$(block sh "$n")
  [ -n "$text" ] || break
  script=$tmp/block$n.sh
  {
    echo "set -euo pipefail"
    while IFS= read -r line; do
      line=${line//\/opt\/delayq/$prefix}
      printf '%s\n' "$line"
    done <<<"$text"
  } >"$script"
  echo "== README sh block $n"
  out=$(bash "$script" 2>&1) || { echo "$out"; echo "README sh block $n failed"; exit 1; }
  echo "$out"
  if grep -q '"topic":"order","timeout"' <<<"$text"; then
    # The daemon block: the pop got the job, the finish finished it, the CLI saw the daemon.
    grep -q '"body":"2 x beans"' <<<"$out" || { echo "the README's /pop did not get the job"; exit 1; }
    grep -q '"message":"finished"' <<<"$out" || { echo "the README's /finish did not finish it"; exit 1; }
  fi
  n=$((n + 1))
done
[ "$n" -gt 2 ] || { echo "expected at least two sh blocks in README.md"; exit 1; }
[ -f "$prefix/lib/cmake/delayq/delayqConfig.cmake" ] || { echo "the README's install made no package"; exit 1; }

# The example, built the README's way: its CMakeLists.txt sets no C++ standard.
block cpp 1 >"$tmp/app/main.cc"
block cmake 1 >"$tmp/app/CMakeLists.txt"
quiet() {  # runs a command, showing its output only when it fails
  local out
  out=$("$@" 2>&1) || { echo "$out" | tail -40; echo "failed: $*"; return 1; }
}
quiet cmake -S "$tmp/app" -B "$tmp/app/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix"
quiet cmake --build "$tmp/app/build"
expected=$(awk '/^It prints:/ { want = 1; next } want && /^```$/ { if (inside) exit; inside = 1; next } inside { print }' "$src/README.md")
[ -n "$expected" ] || { echo "README.md has no 'It prints:' block"; exit 1; }
(cd "$tmp/app" && ./build/app) >"$tmp/app/out.txt"
if ! diff <(echo "$expected") "$tmp/app/out.txt"; then
  echo "the README example printed something else (diff above: README < > program)"
  exit 1
fi
# And the pkg-config line, as typed.
pc_line=$(grep -o 'g++ main.cc \$(PKG_CONFIG_PATH=[^`]*' "$src/README.md")
(cd "$tmp/app" && eval "${pc_line//\/opt\/delayq/$prefix} -o app-pc" && ./app-pc >/dev/null)
echo "README ok: $((n - 1)) sh blocks, the example (CMake and pkg-config) printed what it says"
