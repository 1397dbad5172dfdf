# Sourced by package_test.sh, after it made the packages: delayq and delayq-dbgsym installed on
# this machine with dpkg -i, checked there, then purged. package_test.sh's trap purges them too
# if anything fails on the way, removes the delayq user and /var/lib/delayq when the postinst made
# them (a purge keeps both by design), and so leaves the machine as it found it.
# A machine without the -dev packages cannot be had here (they build delayq); its honest
# substitute: the runtime package's Depends names no -dev package (package_test.sh), ldd resolves
# every library the installed binaries load, each from a package that is not a -dev package, and
# each library they link directly comes from a package that Depends names (so that apt, which
# installs exactly Depends and what they depend on, brings every one of them).
# Uses from package_test.sh: tmp, run_deb, dbg_deb, version, fail, owner, names_in, and the installed, made_user,
# made_state that its cleanup reads.

if [ "$(id -u)" != 0 ]; then
  echo "package_test: not root, so delayq is not installed on this machine (the checks above ran)"
  return 0
fi
for p in delayq delayq-dbgsym delayq-dev; do
  if dpkg -s "$p" >/dev/null 2>&1; then
    fail "$p is installed on this machine: this test installs and purges delayq itself (dpkg --purge $p first)"
  fi
done
[ ! -e /etc/delayq ] || fail "/etc/delayq exists: a purge of delayq would remove its delayqd.conf and token"
getent passwd delayq >/dev/null || made_user=1
[ -e /var/lib/delayq ] || made_state=1

installed=(delayq-dbgsym delayq)
dpkg -i "$run_deb" "$dbg_deb" >"$tmp/dpkg.out" 2>&1 || { cat "$tmp/dpkg.out"; fail "dpkg -i failed"; }
for p in delayq delayq-dbgsym; do
  status=$(dpkg-query -W -f '${Status}' "$p")
  [ "$status" = "install ok installed" ] || fail "$p after dpkg -i: $status"
done

# What dpkg says delayq installed: the binaries, the unit, the config, the docs; no headers.
listed=$(dpkg -L delayq)
for f in /usr/bin/delayqd /usr/bin/delayq /usr/lib/systemd/system/delayqd.service \
         /usr/share/delayq/delayqd.conf /usr/share/doc/delayq/copyright /usr/share/doc/delayq/LICENSE \
         /usr/share/doc/delayq/README.md /usr/share/doc/delayq/docs/operations.md; do
  grep -qx "$f" <<<"$listed" || fail "dpkg -L delayq does not list $f"
done
if grep -E '^/usr/include|\.a$' <<<"$listed"; then fail "dpkg -L delayq lists the headers or libraries above"; fi

# The unit starts the installed binary and names installed docs.
unit=/usr/lib/systemd/system/delayqd.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
binary=${exec_start%% *}
[ "$binary" = /usr/bin/delayqd ] && [ -x "$binary" ] || fail "the unit's ExecStart names '$binary'"
for uri in $(sed -n 's/^Documentation=//p' "$unit"); do
  grep -qx "${uri#file://}" <<<"$listed" || fail "the unit's Documentation $uri is not a file delayq installs"
done
if command -v systemd-analyze >/dev/null; then
  found=$(systemd-analyze verify "$unit" 2>&1 | grep "delayqd.service:" || true)
  [ -z "$found" ] || { echo "$found"; fail "systemd-analyze finds fault with the installed unit"; }
fi

# The installed binaries: stripped, their debug info where gdb looks (delayq-dbgsym), every
# library resolved from a package that is not a -dev package, the direct ones from packages that
# Depends names; and they run.
depends_names=$(names_in Depends "$run_deb")
for bin in /usr/bin/delayqd /usr/bin/delayq; do
  if readelf -S "$bin" | grep -q '\.debug_info'; then fail "$bin is not stripped"; fi
  id=$(readelf -n "$bin" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
  debug=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
  dpkg -L delayq-dbgsym | grep -qx "$debug" || fail "delayq-dbgsym does not install $debug for $bin"
  libs=$(ldd "$bin")
  if grep 'not found' <<<"$libs"; then fail "ldd $bin: the libraries above are not found"; fi
  for path in $(awk '$2 == "=>" {print $3} $1 ~ /^\// {print $1}' <<<"$libs"); do
    pkg=$(owner "$path")
    [ -n "$pkg" ] || fail "ldd $bin: no package holds $path"
    if [[ "$pkg" == *-dev ]]; then fail "ldd $bin: $path comes from the -dev package $pkg"; fi
  done
  for needed in $(objdump -p "$bin" | awk '$1 == "NEEDED" {print $2}'); do
    path=$(awk -v n="$needed" '$1 == n && $2 == "=>" {print $3}' <<<"$libs")
    pkg=$(owner "$path")
    grep -qx "$pkg" <<<"$depends_names" || fail "$bin needs $needed from $pkg, which delayq's Depends does not name"
  done
  out=$("$bin" --version)
  grep -q "$version" <<<"$out" || fail "$bin --version printed '$out'"
done

# The postinst: the delayq user, its data directory, the config and a token only it reads.
getent passwd delayq >/dev/null || fail "the postinst made no delayq user"
[ "$(stat -c %U /var/lib/delayq)" = delayq ] || fail "/var/lib/delayq is not delayq's"
cmp -s /etc/delayq/delayqd.conf /usr/share/delayq/delayqd.conf || fail "the postinst did not copy the config"
[ "$(stat -c '%a %U' /etc/delayq/token)" = "600 delayq" ] || fail "/etc/delayq/token is $(stat -c '%a %U' /etc/delayq/token)"

# The purge: the files, the config and the token go; the store directory and the user stay.
dpkg --purge delayq-dbgsym delayq >"$tmp/dpkg.out" 2>&1 || { cat "$tmp/dpkg.out"; fail "dpkg --purge failed"; }
installed=()
if dpkg -s delayq >/dev/null 2>&1; then fail "delayq is still installed after the purge"; fi
for f in /usr/bin/delayqd /usr/lib/systemd/system/delayqd.service /etc/delayq "$debug"; do
  [ ! -e "$f" ] || fail "$f is still there after the purge"
done
[ -d /var/lib/delayq ] || fail "the purge removed /var/lib/delayq"
getent passwd delayq >/dev/null || fail "the purge removed the delayq user"
