#!/usr/bin/env bash
# Packaging, end to end: install this build into a temp prefix, build an outside project against
# it with find_package(delayq CONFIG) and with pkg-config, run both, and make a Debian package
# with cpack whose contents hold the headers, libraries, CMake package and .pc file.
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

cmake -S "$src/tests/package" -B "$tmp/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
"$tmp/consumer/consumer" "$tmp/store-cmake"

PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --exists delayq
g++ -O0 "$src/tests/package/main.cc" -o "$tmp/consumer-pc" \
  $(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags --libs delayq)
"$tmp/consumer-pc" "$tmp/store-pc"

(cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/deb" >/dev/null)
deb=$(ls "$tmp"/deb/*.deb)
contents=$(dpkg-deb -c "$deb")
for f in include/delayq/queue.h lib/cmake/delayq/delayqTargets.cmake lib/pkgconfig/delayq.pc \
         libdelayq_core.a libdelayq_wheel.a; do
  grep -q "$f" <<<"$contents" || { echo "$(basename "$deb") is missing $f"; exit 1; }
done
echo "package ok: $(basename "$deb")"
