#!/usr/bin/env bash
# docs/production.md's nginx configuration, as written, in front of this build's delayqd: TLS
# (a self-signed certificate made here), the bearer token passed through, a 2 MB request body
# reaching delayqd (and its JSON answer coming back, not nginx's page), a /pop that waits for its
# job and one that waits out its timeout answered by delayqd, keep-alive to the upstream.
# Skipped (exit 77) where nginx or openssl is not installed: nginx is no dependency of delayq.
# The liberties: the server listens on a free loopback port instead of 443, the certificate
# paths point into a scratch directory, the upstream's port is delayqd's, and the blocks sit in
# a minimal nginx.conf (events, http, pid and temp paths in the scratch directory).
# Usage: proxy_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$(cd "$2" && pwd)
command -v nginx >/dev/null || PATH=$PATH:/usr/sbin
if ! command -v nginx >/dev/null || ! command -v openssl >/dev/null; then
  echo "skipped: nginx or openssl is not installed"
  exit 77
fi
tmp=$(mktemp -d)
chmod 755 "$tmp"  # nginx's workers (another user when it runs as root) keep bodies here
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
dport=$(free_port)
pport=$(free_port)

# The ```nginx block of the page.
conf=$(awk '/^```/ { if (inside) exit; if ($0 == "```nginx") inside = 1; next } inside { print }' \
  "$src/docs/production.md")
[ -n "$conf" ] || { echo "docs/production.md has no nginx block"; exit 1; }
conf=${conf//listen 443 ssl;/listen 127.0.0.1:$pport ssl;}
conf=${conf//\/etc\/ssl\/delayq/$tmp}
conf=${conf//127.0.0.1:9277/127.0.0.1:$dport}
mkdir -p "$tmp/logs"
cat >"$tmp/nginx.conf" <<EOF
daemon off;
pid $tmp/nginx.pid;
error_log $tmp/logs/error.log;
events {}
http {
  access_log $tmp/logs/access.log;
  client_body_temp_path $tmp/body;
  proxy_temp_path $tmp/proxy;
  fastcgi_temp_path $tmp/fastcgi;
  uwsgi_temp_path $tmp/uwsgi;
  scgi_temp_path $tmp/scgi;
$conf
}
EOF
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=delayq.example.com \
  -keyout "$tmp/privkey.pem" -out "$tmp/fullchain.pem" 2>/dev/null
nginx -t -p "$tmp" -c "$tmp/nginx.conf" 2>&1 | tail -1

echo s3cret >"$tmp/token"
chmod 600 "$tmp/token"
"$build/src/delayqd/delayqd" --listen "127.0.0.1:$dport" --store "$tmp/data" --sync none \
  --token-file "$tmp/token" --pop-timeout 3 2>"$tmp/delayqd.log" &
pids+=($!)
nginx -p "$tmp" -c "$tmp/nginx.conf" &
pids+=($!)
url=https://127.0.0.1:$pport
for i in $(seq 100); do curl -skf "$url/health" >/dev/null && break; sleep 0.1; done
call() {  # call ROUTE BODY: through the proxy, with the token; prints the answer
  curl -sk "$url/$1" -H "Authorization: Bearer s3cret" --data-binary "$2"
}
expect() {  # expect TEXT ANSWER
  grep -qF -- "$1" <<<"$2" || { echo "expected $1 in: ${2:0:300}"; exit 1; }
}

expect '"code":0' "$(call push '{"topic":"order","id":"o-1","delay":1}')"
# The token goes through: without it, delayqd's own 401.
expect '"error":"unauthorized"' "$(curl -sk "$url/stats")"
# A pop that waits for the job (due after 1 s), then one that waits out its 2 s timeout:
# answered by delayqd (data null), not cut by the proxy.
expect '"id":"o-1"' "$(call pop '{"topic":"order","timeout":3}')"
expect '"message":"no job ready"' "$(call pop '{"topic":"order","timeout":2}')"
# A 2 MB body passes nginx (client_max_body_size 4m) and reaches delayqd, whose JSON answer says
# the job body is over its limit (--max-job-bytes, 1 MiB).
{ printf '{"topic":"order","body":"'; head -c 2000000 /dev/zero | tr '\0' x; printf '"}'; } >"$tmp/big.json"
answer=$(call push "@$tmp/big.json")
expect '"code":1' "$answer"
expect 'delayqd --max-job-bytes' "$answer"
# The CLI through the daemon directly (it speaks no TLS), as the page says.
"$build/src/cli/delayq" --url "http://127.0.0.1:$dport" --token-file "$tmp/token" stats >/dev/null
echo "proxy ok: docs/production.md's nginx block serves delayqd over TLS as the page says"
