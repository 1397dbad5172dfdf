#!/usr/bin/env bash
# docs/redis.md's stunnel configuration ("TLS by a sidecar"), as written, between this build's
# delayqd and CLI and a redis-server that speaks TLS only (--port 0 --tls-port; certificates made
# here: a CA and a server certificate for redis.example.com) and wants a password. stunnel
# accepts plain TCP on loopback and speaks TLS to the server, checking its certificate; delayqd
# and the CLI connect to stunnel. Checked: push, a pop waiting before it gets the job, finish (ack), the
# CLI's stats; and that stunnel refuses a server whose certificate its CA did not sign.
# Skipped (exit 77) where stunnel, openssl or redis-server is not installed.
# The liberties: free loopback ports instead of 6380 and 6379, the CA file points into a scratch
# directory, and two global lines (foreground, no pid file) so that the test owns the process.
# Usage: redis_tls_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$(cd "$2" && pwd)
stunnel=$(command -v stunnel4 || command -v stunnel || true)
if [ -z "$stunnel" ] || ! command -v openssl >/dev/null || ! command -v redis-server >/dev/null; then
  echo "skipped: stunnel4, openssl or redis-server is not installed"
  exit 77
fi
tmp=$(mktemp -d)
# Every process this script starts runs in the background of this shell: stopped at the end.
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rport=$(free_port)  # redis-server, TLS only
sport=$(free_port)  # stunnel, plain TCP
dport=$(free_port)  # delayqd
fail() { echo "$1"; for f in "$tmp"/*.log; do echo "---- $f"; tail -20 "$f"; done; exit 1; }

# A CA, and a certificate for redis.example.com that it signs.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=delayq-test-ca \
  -keyout "$tmp/ca.key" -out "$tmp/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=redis.example.com \
  -keyout "$tmp/redis.key" -out "$tmp/redis.csr" 2>/dev/null
printf 'subjectAltName=DNS:redis.example.com\n' >"$tmp/san.ext"
openssl x509 -req -in "$tmp/redis.csr" -CA "$tmp/ca.crt" -CAkey "$tmp/ca.key" -CAcreateserial \
  -days 1 -extfile "$tmp/san.ext" -out "$tmp/redis.crt" 2>/dev/null

echo "tls secret" >"$tmp/pw"
chmod 600 "$tmp/pw"
redis-server --port 0 --tls-port "$rport" --bind 127.0.0.1 --tls-cert-file "$tmp/redis.crt" \
  --tls-key-file "$tmp/redis.key" --tls-ca-cert-file "$tmp/ca.crt" --tls-auth-clients no \
  --requirepass "tls secret" --dir "$tmp" --save "" --appendonly no \
  --logfile "$tmp/redis.log" --daemonize no &

# The ```ini block of docs/redis.md, its ports and CA file made the test's.
conf=$(awk '/^```/ { if (inside) exit; if ($0 == "```ini") inside = 1; next } inside { print }' \
  "$src/docs/redis.md")
[ -n "$conf" ] || { echo "docs/redis.md has no stunnel (ini) block"; exit 1; }
conf=${conf//127.0.0.1:6380/127.0.0.1:$sport}
conf=${conf//redis.example.com:6379/127.0.0.1:$rport}
conf=${conf//\/etc\/ssl\/certs\/redis-ca.crt/$tmp/ca.crt}
{ printf 'foreground = yes\npid =\noutput = %s/stunnel.log\n' "$tmp"; echo "$conf"; } >"$tmp/stunnel.conf"
"$stunnel" "$tmp/stunnel.conf" 2>>"$tmp/stunnel.log" &

cli() { "$build/src/cli/delayq" --redis "redis://127.0.0.1:$sport" --redis-password-file "$tmp/pw" "$@"; }
for i in $(seq 200); do cli stats >/dev/null 2>&1 && break; sleep 0.1; done
cli stats >/dev/null 2>"$tmp/cli.log" || fail "the CLI cannot reach redis through stunnel"

"$build/src/delayqd/delayqd" --listen "127.0.0.1:$dport" --redis "redis://127.0.0.1:$sport" \
  --redis-password-file "$tmp/pw" --queue tls 2>"$tmp/delayqd.log" &
for i in $(seq 200); do curl -sf "http://127.0.0.1:$dport/health" >/dev/null && break; sleep 0.1; done
call() { curl -s "http://127.0.0.1:$dport/$1" --data-binary "$2"; }
expect() {  # expect TEXT ANSWER
  grep -qF -- "$1" <<<"$2" || fail "expected $1 in: ${2:0:300}"
}

# A pop waiting on an empty topic gets the job pushed meanwhile, then the job is finished.
call pop '{"topic":"order","timeout":20}' >"$tmp/pop.json" &
popper=$!
sleep 0.5
expect '"code":0' "$(call push '{"topic":"order","id":"o-1","body":"over tls"}')"
wait "$popper"
expect '"id":"o-1"' "$(cat "$tmp/pop.json")"
expect '"body":"over tls"' "$(cat "$tmp/pop.json")"
expect '"code":0' "$(call finish '{"id":"o-1"}')"
stats=$(cli --queue tls stats --json)
expect '"acked":1' "$stats"

# The certificate is checked: a server certificate from another CA is refused by stunnel, and
# the CLI fails (the connection closes before Redis answers).
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=redis.example.com \
  -keyout "$tmp/other.key" -out "$tmp/other.crt" 2>/dev/null
oport=$(free_port)
redis-server --port 0 --tls-port "$oport" --bind 127.0.0.1 --tls-cert-file "$tmp/other.crt" \
  --tls-key-file "$tmp/other.key" --tls-ca-cert-file "$tmp/other.crt" --tls-auth-clients no \
  --dir "$tmp" --save "" --appendonly no --logfile "$tmp/other-redis.log" --daemonize no &
oconf=${conf//127.0.0.1:$rport/127.0.0.1:$oport}
osport=$(free_port)
oconf=${oconf//127.0.0.1:$sport/127.0.0.1:$osport}
{ printf 'foreground = yes\npid =\noutput = %s/other-stunnel.log\n' "$tmp"; echo "$oconf"; } >"$tmp/other.conf"
"$stunnel" "$tmp/other.conf" 2>>"$tmp/other-stunnel.log" &
for i in $(seq 100); do (echo >"/dev/tcp/127.0.0.1/$osport") 2>/dev/null && break; sleep 0.1; done
if "$build/src/cli/delayq" --redis "redis://127.0.0.1:$osport" stats >/dev/null 2>"$tmp/bad.log"; then
  fail "stunnel let through a server certificate its CA did not sign"
fi
grep -q 'Rejected by CERT' "$tmp/other-stunnel.log" ||
  fail "the CLI failed, but stunnel's log names no certificate check"
echo "redis tls ok: docs/redis.md's stunnel block carries delayq to a TLS-only Redis"
