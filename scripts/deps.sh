# Sourced by the other scripts: installs the Debian 12 packages delayq needs, once.
# Quiet when everything is already there; apt-get update only when something is missing.
delayq_packages=(cmake ninja-build g++ lld libboost-dev libgtest-dev libgmock-dev libbenchmark-dev librocksdb-dev libhiredis-dev libfmt-dev libhowardhinnant-date-dev redis-server redis-sentinel pkg-config python3 curl)

# dpkg-dev and file: cpack's dependency list (dpkg-shlibdeps) and debug package (file, objcopy).
delayq_packages+=(dpkg-dev file)

delayq_install_deps() {
  local missing=()
  for p in "${delayq_packages[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Configures BUILD_DIR with Ninja, or, when BUILD_DIR was already configured (by hand, say with
# `cmake -S . -B build` and its default generator), with whatever generator it has: CMake
# refuses to change the generator of an existing build directory.
delayq_configure() {  # delayq_configure BUILD_DIR [cmake args...]
  local dir=$1
  shift
  local generator=(-G Ninja)
  [ -f "$dir/CMakeCache.txt" ] && generator=()
  cmake -S . -B "$dir" "${generator[@]}" "$@" >/dev/null
}
