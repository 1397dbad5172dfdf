#!/usr/bin/env bash
# Packaging, end to end.
# 1. `cmake --install` into a temp prefix: an outside project builds against it with
#    find_package(delayq CONFIG) and with pkg-config, and runs; the systemd unit installed there
#    names that prefix's delayqd and docs.
# 2. cpack from the build directory, as README.md says (its output sent to a temp directory):
#    three packages. delayq (runtime): delayqd, the CLI and delayq-crashtest stripped (the last
#    answers --help), the unit, the default config, the maintainer scripts, the docs and the license, no headers or libraries, Depends without
#    any -dev package. delayq-dbgsym: the binaries' debug info, found by build id. delayq-dev:
#    the headers, the static libraries (an outside program links them), the CMake package and
#    the .pc file, Depends on delayq and the -dev packages (each library its .pc links among them).
# 3. As root: dpkg -i of delayq and delayq-dbgsym on this machine (package_install_check.sh),
#    then a purge; the machine is left as it was found (a trap purges on any failure too).
# Usage: package_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
tmp=$(mktemp -d)
# What package_install_check.sh installed or made, undone by cleanup().
installed=()
made_user=0
made_state=0
cleanup() {
  if [ "${#installed[@]}" -gt 0 ]; then
    dpkg --purge "${installed[@]}" >/dev/null 2>&1 || echo "package_test: could not purge ${installed[*]}"
  fi
  if [ "$made_user" = 1 ] && getent passwd delayq >/dev/null; then
    userdel delayq 2>/dev/null || echo "package_test: could not remove the user delayq"
  fi
  if [ "$made_user" = 1 ] && getent group delayq >/dev/null; then groupdel delayq 2>/dev/null || true; fi
  if [ "$made_state" = 1 ]; then rm -rf /var/lib/delayq; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "$*"; exit 1; }
owner() {  # the package that holds a file, with /lib and /usr/lib taken as one
  local p=$1 alt
  if [[ "$p" == /usr/* ]]; then alt=${p#/usr}; else alt=/usr$p; fi
  { dpkg -S "$p" 2>/dev/null || dpkg -S "$alt" 2>/dev/null; } | head -1 | sed 's/[:,].*//'
}
names_in() {  # names_in FIELD DEB: the package names a relation field of DEB lists, one a line
  dpkg-deb -f "$2" "$1" | tr ',' '\n' | sed 's/^ *//; s/[ :(].*//'
}

# 1. The install tree, and outside projects built against it.
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
for f in include/delayq/store.h include/delayq/http.h lib/libdelayq_client.a lib/libdelayq_wire.a \
         lib/cmake/delayq/delayqConfig.cmake lib/pkgconfig/delayq.pc \
         bin/delayqd bin/delayq bin/delayq-crashtest lib/systemd/system/delayqd.service \
         share/doc/delayq/README.md; do
  [ -f "$tmp/prefix/$f" ] || fail "install is missing $f"
done
# The unit names what this install put there, whatever the prefix.
unit_value() { sed -n "s/^$1=//p" "$2"; }
exec_start=$(unit_value ExecStart "$tmp/prefix/lib/systemd/system/delayqd.service")
[ "${exec_start%% *}" = "$tmp/prefix/bin/delayqd" ] || fail "the installed unit's ExecStart is '$exec_start'"
for uri in $(unit_value Documentation "$tmp/prefix/lib/systemd/system/delayqd.service"); do
  [[ "$uri" == "file://$tmp/prefix/"* && -f "${uri#file://}" ]] ||
    fail "the installed unit's Documentation $uri is no file of the install"
done

cmake -S "$src/tests/project/package" -B "$tmp/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
"$tmp/consumer/consumer" "$tmp/store-cmake"

PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --exists delayq
g++ -O0 "$src/tests/project/package/main.cc" -o "$tmp/consumer-pc" \
  $(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags --libs delayq)
"$tmp/consumer-pc" "$tmp/store-pc"

# 2. The packages, made the README's way: `cd build && cpack` (here with -B, so that the test
# leaves nothing in the build directory).
grep -qx 'cd build && cpack' "$src/README.md" || fail "README.md has no line 'cd build && cpack'"
(cd "$build" && cpack -B "$tmp/deb" >"$tmp/cpack.out") || { cat "$tmp/cpack.out"; fail "cpack failed"; }
version=$(sed -n 's/^project(delayq VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
arch=$(dpkg --print-architecture)
run_deb=$tmp/deb/delayq_${version}_$arch.deb
dev_deb=$tmp/deb/delayq-dev_${version}_$arch.deb
dbg_deb=$tmp/deb/delayq-dbgsym_${version}_$arch.ddeb
deb=$run_deb  # named on the last line
for p in "$run_deb" "$dev_deb" "$dbg_deb"; do [ -f "$p" ] || fail "cpack made no $(basename "$p")"; done
# The README's commands leave nothing that git would see: what they make is ignored.
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  for path in build/x build-asan/x _CPack_Packages/x "$(basename "$run_deb")" "$(basename "$dbg_deb")" \
              delayq-data/x; do
    git -C "$src" check-ignore -q "$path" || fail ".gitignore does not cover $path"
  done
fi

# The runtime package: the daemon as a service and the CLI, the docs and the license; nothing a
# compile needs.
contents=$(dpkg-deb -c "$run_deb" | awk '{print $6}')
for f in ./usr/bin/delayqd ./usr/bin/delayq ./usr/bin/delayq-crashtest \
         ./usr/lib/systemd/system/delayqd.service \
         ./usr/share/delayq/delayqd.conf ./usr/share/doc/delayq/copyright ./usr/share/doc/delayq/LICENSE \
         ./usr/share/doc/delayq/README.md ./usr/share/doc/delayq/docs/operations.md; do
  grep -qx "$f" <<<"$contents" || fail "$(basename "$run_deb") is missing $f"
done
if grep -E '^\./usr/include/|\.a$|/cmake/|/pkgconfig/' <<<"$contents"; then
  fail "$(basename "$run_deb") holds the files above, which belong to delayq-dev"
fi
depends=$(dpkg-deb -f "$run_deb" Depends)
# dpkg-shlibdeps found the libraries the binaries load; no -dev package among them.
for p in librocksdb libhiredis libstdc++6 libc6 passwd; do
  grep -q "\(^\|, \)$p" <<<"$depends" || fail "$(basename "$run_deb") Depends lacks $p: $depends"
done
if grep -q -- '-dev\b' <<<"$depends"; then fail "$(basename "$run_deb") depends on a -dev package: $depends"; fi

# The license: LICENSE is the Apache License 2.0 word for word (compared with Debian's copy where
# there is one), shipped with the package beside a copyright file in Debian's machine-readable
# format that names it; the control file names a maintainer who reads mail.
grep -q "Apache License" "$src/LICENSE" && grep -q "Version 2.0, January 2004" "$src/LICENSE" ||
  fail "LICENSE is not the Apache License 2.0"
if [ -f /usr/share/common-licenses/Apache-2.0 ]; then
  cmp -s "$src/LICENSE" /usr/share/common-licenses/Apache-2.0 || fail "LICENSE differs from the Apache License 2.0 text"
fi
dpkg-deb -x "$run_deb" "$tmp/root"
for line in "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" \
            "Upstream-Name: delayq" "Files: *" "License: Apache-2.0"; do
  grep -qxF "$line" "$tmp/root/usr/share/doc/delayq/copyright" || fail "copyright lacks the line '$line'"
done
for deb in "$run_deb" "$dev_deb"; do
  maintainer=$(dpkg-deb -f "$deb" Maintainer)
  [ "$maintainer" = "delayq developers <delayq-maint@lists.delayq.dev>" ] ||
    fail "$(basename "$deb")'s Maintainer is '$maintainer'"
done
grep -q "^## License" "$src/README.md" && grep -q "Apache License 2.0" "$src/README.md" ||
  fail "README.md has no License section naming the Apache License 2.0"
mkdir "$tmp/control"
dpkg-deb -e "$run_deb" "$tmp/control"
for script in postinst postrm; do
  [ -x "$tmp/control/$script" ] || fail "$(basename "$run_deb") has no executable $script"
  sh -n "$tmp/control/$script"
done
grep -q "useradd --system" "$tmp/control/postinst" || fail "postinst makes no system user"

# Stripped binaries, and their debug info in delayq-dbgsym under the build id gdb looks for.
dpkg-deb -x "$dbg_deb" "$tmp/dbg"
for bin in delayqd delayq delayq-crashtest; do
  sections=$(readelf -S "$tmp/root/usr/bin/$bin")
  if grep -q '\.debug_info' <<<"$sections"; then fail "$bin in $(basename "$run_deb") is not stripped"; fi
  grep -q '\.gnu_debuglink' <<<"$sections" || fail "$bin in $(basename "$run_deb") has no .gnu_debuglink"
  id=$(readelf -n "$tmp/root/usr/bin/$bin" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
  [ -n "$id" ] || fail "$bin has no build id"
  debug=$tmp/dbg/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
  [ -f "$debug" ] || fail "$(basename "$dbg_deb") has no $debug for $bin"
  readelf -S "$debug" 2>/dev/null | grep -q '\.debug_info' || fail "$debug holds no .debug_info"
done
"$tmp/root/usr/bin/delayq-crashtest" --help | grep -- '--dir DIR' >/dev/null ||
  fail "the packaged delayq-crashtest does not answer --help"

# The dev package: what a compile needs, and an outside program built against its tree alone
# (its static libraries lost their debug info, not their code); it depends on delayq and on the
# -dev packages of what its headers and libraries use, each a package this machine has.
contents=$(dpkg-deb -c "$dev_deb" | awk '{print $6}')
for f in ./usr/include/delayq/queue.h ./usr/lib/cmake/delayq/delayqTargets.cmake \
         ./usr/lib/pkgconfig/delayq.pc ./usr/lib/libdelayq_core.a ./usr/lib/libdelayq_wheel.a \
         ./usr/include/delayq/http.h ./usr/lib/libdelayq_client.a ./usr/lib/libdelayq_wire.a \
         ./usr/share/doc/delayq-dev/copyright; do
  grep -qx "$f" <<<"$contents" || fail "$(basename "$dev_deb") is missing $f"
done
if grep '^\./usr/bin/' <<<"$contents"; then fail "$(basename "$dev_deb") holds the binaries above"; fi
depends=$(dpkg-deb -f "$dev_deb" Depends)
grep -q "^delayq (= $version)" <<<"$depends" || fail "$(basename "$dev_deb") does not depend on delayq $version: $depends"
for p in libboost-dev librocksdb-dev libhiredis-dev pkg-config; do
  grep -q "\(^\|, \)$p\b" <<<"$depends" || fail "$(basename "$dev_deb") Depends lacks $p: $depends"
  dpkg -s "$p" >/dev/null 2>&1 || fail "$(basename "$dev_deb") depends on $p, which is not installed here"
done
dpkg-deb -x "$dev_deb" "$tmp/devroot"
g++ -O0 "$src/tests/project/package/main.cc" -o "$tmp/consumer-deb" \
  $(PKG_CONFIG_PATH="$tmp/devroot/usr/lib/pkgconfig" pkg-config --cflags --libs delayq)
"$tmp/consumer-deb" "$tmp/store-deb"
# Every outside library that link asks for (-lNAME) is a -dev package's libNAME.so that the dev
# package depends on.
dev_names=$(names_in Depends "$dev_deb")
for lib in $(PKG_CONFIG_PATH="$tmp/devroot/usr/lib/pkgconfig" pkg-config --libs-only-l delayq); do
  name=${lib#-l}
  [[ "$name" != delayq_* ]] || continue
  so=$(g++ -print-file-name="lib$name.so")
  [ "$so" != "lib$name.so" ] || fail "delayq.pc links -l$name, and no lib$name.so is here"
  pkg=$(owner "$(realpath -s "$so")")
  grep -qx "$pkg" <<<"$dev_names" ||
    fail "delayq.pc links -l$name, from $pkg, which $(basename "$dev_deb") does not depend on"
done

# 3. On this machine.
. "$src/tests/project/package_install_check.sh"

# The shipped config is one delayqd takes (the packaged, stripped one): every setting in it
# known and valid (the store, the port and the token are moved to scratch ones by flags, which
# win over the file).
head -c 32 /dev/urandom | base64 >"$tmp/token"
chmod 600 "$tmp/token"
"$tmp/root/usr/bin/delayqd" --config "$tmp/root/usr/share/delayq/delayqd.conf" \
  --store "$tmp/store-conf" --listen 127.0.0.1:0 --token-file "$tmp/token" >"$tmp/d.out" 2>"$tmp/d.err" &
daemon=$!
for _ in $(seq 1 600); do
  grep -q "listening on" "$tmp/d.out" && break
  kill -0 "$daemon" 2>/dev/null || { cat "$tmp/d.err"; fail "delayqd refused the shipped config"; }
  sleep 0.1
done
kill -TERM "$daemon"
wait "$daemon" || { cat "$tmp/d.err"; fail "delayqd with the shipped config did not stop cleanly"; }
# systemd's own check of the unit, where systemd is there (only its findings about the unit
# count: the binary is not installed here, and the machine may lack parts of systemd).
if command -v systemd-analyze >/dev/null; then
  found=$(systemd-analyze verify "$tmp/root/usr/lib/systemd/system/delayqd.service" 2>&1 |
    grep "delayqd.service:" | grep -v "Command /usr/bin/delayqd is not executable" || true)
  [ -z "$found" ] || { echo "$found"; echo "systemd-analyze finds fault with delayqd.service"; exit 1; }
fi
# Type=notify: systemctl start returns once delayqd sent READY=1 (tests/daemon/notify_test.cc).
grep -qx 'Type=notify' "$tmp/root/usr/lib/systemd/system/delayqd.service" ||
  { echo "delayqd.service is not Type=notify"; exit 1; }
echo "package ok: $(basename "$deb")"
