#!/usr/bin/env bash
# examples/README.md, as typed: every program of its table is copied out of the tree, alone, and
# built against an installed delayq with the README's commands (CMake, then pkg-config); each
# build runs and prints what the program built in the tree prints. The README's in-tree block
# runs too.
# The liberties, all mechanical: the install prefix /opt/delayq becomes a scratch directory (made
# with `cmake --install BUILD_DIR --prefix`), `build` in the scratch directory is this build, the
# line `example=...` names each file of the table in turn, and the durable demo (real time, with a
# kill -9) is checked by its last line, not by its whole output, which depends on timing.
# Usage: examples_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
readme=$src/examples/README.md

quiet() {  # runs a command, showing its output only when it fails
  local out
  out=$("$@" 2>&1) || { echo "$out" | tail -40; echo "failed: $*"; return 1; }
}
quiet cmake --install "$build" --prefix "$prefix"

# block LANG N: the Nth (from 1) fenced block of the README whose info string is LANG.
block() {
  awk -v lang="$1" -v want="$2" '
    /^```/ { if (inside) { inside = 0; next } if ($0 == "```" lang) { n++; if (n == want) inside = 1 } next }
    inside { print }' "$readme"
}
in_tree=$(block sh 1)
copy_out=$(block sh 2)
pkg_config=$(block sh 3)
[ -n "$in_tree" ] && [ -n "$copy_out" ] && [ -n "$pkg_config" ] ||
  { echo "examples/README.md: expected three sh blocks"; exit 1; }

# The files of the table: every program under examples/ must be in it.
mapfile -t files < <(grep -o '^| `[a-z_]*/[a-z_]*\.cc`' "$readme" | tr -d '|` ')
[ "${#files[@]}" -ge 6 ] || { echo "examples/README.md lists ${#files[@]} programs"; exit 1; }
while IFS= read -r f; do
  printf '%s\n' "${files[@]}" | grep -qx "$f" || { echo "examples/README.md does not list $f"; exit 1; }
done < <(cd "$src/examples" && find . -name '*.cc' | sed 's|^\./||' | sort)

# The in-tree block, as typed, from a directory whose `build` is this build.
mkdir -p "$tmp/tree"
ln -s "$build" "$tmp/tree/build"
(cd "$tmp/tree" && bash -euo pipefail -c "$in_tree") >"$tmp/tree/out.txt" 2>&1 ||
  { tail -40 "$tmp/tree/out.txt"; echo "the README's in-tree block failed"; exit 1; }

# The program built in the tree from examples/<dir>/<file>.cc.
built() {
  local dir=${1%%/*} name
  name=$(basename "$1" .cc)
  case $name in
    main) [ -x "$build/examples/$dir/$dir" ] && echo "$build/examples/$dir/$dir" || echo "$build/examples/$dir" ;;
    durable_main) echo "$build/examples/$dir/${dir}_durable" ;;
  esac
}

for f in "${files[@]}"; do
  echo "== $f"
  work=$tmp/work-${f//\//-}
  mkdir -p "$work"
  ln -s "$src/examples" "$work/examples"
  script=${copy_out//\/opt\/delayq/$prefix}
  script=$(sed "s|^example=[^ ]*|example=examples/$f|" <<<"$script")
  grep -q "^example=examples/$f" <<<"$script" || { echo "no example= line in the README's block"; exit 1; }
  # What `cp` copied is all the directory holds besides what the README writes.
  (cd "$work" && bash -euo pipefail -c "$script") >"$work/cmake.txt" 2>&1 ||
    { tail -40 "$work/cmake.txt"; echo "$f: the README's CMake commands failed"; exit 1; }
  [ "$(ls "$work/app" | sort | tr '\n' ' ')" = "CMakeLists.txt build main.cc " ] ||
    { ls "$work/app"; echo "$f: the app directory holds more than the README put there"; exit 1; }
  (cd "$work" && bash -euo pipefail -c "${pkg_config//\/opt\/delayq/$prefix}") >"$work/pc.txt" 2>&1 ||
    { tail -40 "$work/pc.txt"; echo "$f: the README's pkg-config commands failed"; exit 1; }
  if [ "$(basename "$f")" = durable_main.cc ]; then
    for out in "$work/cmake.txt" "$work/pc.txt"; do
      tail -1 "$out" | grep -q '^Nothing was lost to the crash' ||
        { tail -20 "$out"; echo "$f: the copy did not end as the README says"; exit 1; }
    done
    continue
  fi
  # The run's output is the last part of what the block printed: compare with the tree's program.
  expected=$("$(built "$f")")
  n=$(wc -l <<<"$expected")
  for out in "$work/cmake.txt" "$work/pc.txt"; do
    if ! diff <(echo "$expected") <(tail -n "$n" "$out"); then
      echo "$f: the copy built outside the tree printed something else (diff above: tree < > copy)"
      exit 1
    fi
  done
done
echo "examples ok: ${#files[@]} programs copied out, built with CMake and pkg-config, as in the tree"
