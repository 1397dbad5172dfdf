#!/usr/bin/env bash
# Packaging, end to end: install this build into a temp prefix, build an outside project against
# it with find_package(delayq CONFIG) and with pkg-config, run both, and make a Debian package
# with cpack whose contents hold the headers, libraries, CMake package and .pc file, and delayqd
# as a service (its unit, its default config, the maintainer scripts).
# Usage: package_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
for f in include/delayq/store.h lib/cmake/delayq/delayqConfig.cmake lib/pkgconfig/delayq.pc; do
  [ -f "$tmp/prefix/$f" ] || { echo "install is missing $f"; exit 1; }
done

cmake -S "$src/tests/project/package" -B "$tmp/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
"$tmp/consumer/consumer" "$tmp/store-cmake"

PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --exists delayq
g++ -O0 "$src/tests/project/package/main.cc" -o "$tmp/consumer-pc" \
  $(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags --libs delayq)
"$tmp/consumer-pc" "$tmp/store-pc"

(cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/deb" >/dev/null)
deb=$(ls "$tmp"/deb/*.deb)
contents=$(dpkg-deb -c "$deb")
for f in include/delayq/queue.h lib/cmake/delayq/delayqTargets.cmake lib/pkgconfig/delayq.pc \
         libdelayq_core.a libdelayq_wheel.a; do
  grep -q "$f" <<<"$contents" || { echo "$(basename "$deb") is missing $f"; exit 1; }
done
# The daemon as a service: the binary, its unit, its default config, and the maintainer scripts
# that make the user, the data directory, the config and a token.
for f in ./usr/bin/delayqd ./usr/lib/systemd/system/delayqd.service ./usr/share/delayq/delayqd.conf; do
  grep -q " $f\$" <<<"$contents" || { echo "$(basename "$deb") is missing $f"; exit 1; }
done
# The license: LICENSE is the Apache License 2.0 word for word (compared with Debian's copy where
# there is one), shipped with the package beside a copyright file in Debian's machine-readable
# format that names it; the control file names a maintainer who reads mail.
grep -q "Apache License" "$src/LICENSE" && grep -q "Version 2.0, January 2004" "$src/LICENSE" ||
  { echo "LICENSE is not the Apache License 2.0"; exit 1; }
if [ -f /usr/share/common-licenses/Apache-2.0 ]; then
  cmp -s "$src/LICENSE" /usr/share/common-licenses/Apache-2.0 ||
    { echo "LICENSE differs from the Apache License 2.0 text"; exit 1; }
fi
for f in ./usr/share/doc/delayq/copyright ./usr/share/doc/delayq/LICENSE; do
  grep -q " $f\$" <<<"$contents" || { echo "$(basename "$deb") is missing $f"; exit 1; }
done
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/delayq/copyright >"$tmp/copyright"
for line in "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" \
            "Upstream-Name: delayq" "Files: *" "License: Apache-2.0"; do
  grep -qxF "$line" "$tmp/copyright" || { echo "copyright lacks the line '$line'"; exit 1; }
done
maintainer=$(dpkg-deb -f "$deb" Maintainer)
[ "$maintainer" = "delayq developers <delayq-maint@lists.delayq.dev>" ] ||
  { echo "the package's Maintainer is '$maintainer'"; exit 1; }
grep -q "^## License" "$src/README.md" && grep -q "Apache License 2.0" "$src/README.md" ||
  { echo "README.md has no License section naming the Apache License 2.0"; exit 1; }
mkdir "$tmp/control"
dpkg-deb -e "$deb" "$tmp/control"
for script in postinst postrm; do
  [ -x "$tmp/control/$script" ] || { echo "$(basename "$deb") has no executable $script"; exit 1; }
  sh -n "$tmp/control/$script"
done
grep -q "useradd --system" "$tmp/control/postinst" || { echo "postinst makes no system user"; exit 1; }
# The shipped config is one delayqd takes: every setting in it known and valid (the store, the
# port and the token are moved to scratch ones by flags, which win over the file).
head -c 32 /dev/urandom | base64 >"$tmp/token"
chmod 600 "$tmp/token"
dpkg-deb -x "$deb" "$tmp/root"
"$build/src/delayqd/delayqd" --config "$tmp/root/usr/share/delayq/delayqd.conf" \
  --store "$tmp/store-conf" --listen 127.0.0.1:0 --token-file "$tmp/token" >"$tmp/d.out" 2>"$tmp/d.err" &
daemon=$!
for _ in $(seq 1 600); do
  grep -q "listening on" "$tmp/d.out" && break
  kill -0 "$daemon" 2>/dev/null || { cat "$tmp/d.err"; echo "delayqd refused the shipped config"; exit 1; }
  sleep 0.1
done
kill -TERM "$daemon"
wait "$daemon" || { cat "$tmp/d.err"; echo "delayqd with the shipped config did not stop cleanly"; exit 1; }
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
