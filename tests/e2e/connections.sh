#!/usr/bin/env bash
# Connections (issue 16, item 4), against real peers:
#   - an HTTP server (python's http.server) as KB_REDIS: kb-submit, kb-scheduler and kb-runner
#     each exit 4 at once with one line "... is not a redis server";
#   - a peer that answers PING and then drops every connection: kb-submit backs off (a few
#     reconnects in its 3 s budget, not thousands) and logs at most one "reconnecting" line;
#   - a redis-server with a password: none given (NOAUTH), a wrong one from the environment and
#     from a 0600 file (WRONGPASS): exit 4 naming the address and the credential's source; the
#     right one works.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"

# serve KIND: a TCP peer on a free port of 127.0.0.1, its port in $T/port.KIND
serve() {
  "$KB_PY" - "$1" "$T/port.$1" > "$T/serve.$1.log" 2>&1 <<'PY' &
import http.server, socket, sys, threading
kind, port_file = sys.argv[1], sys.argv[2]
if kind == "http":
    srv = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    open(port_file, "w").write(str(srv.server_address[1]))
    srv.serve_forever()
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
open(port_file, "w").write(str(s.getsockname()[1]))
def pong_then_drop(c):  # answers the handshake's PING, then drops the connection
    try:
        if c.recv(4096):
            c.sendall(b"+PONG\r\n")
        c.recv(4096)
    finally:
        c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=pong_then_drop, args=(c,), daemon=True).start()
PY
  BG_PIDS+=($!)
  for _ in $(seq 100); do [ -s "$T/port.$1" ] && break; sleep 0.05; done
}
# expect4 LOG PATTERN CMD...: CMD exits 4 within 8 s with PATTERN on stderr
expect4() {
  local log=$1 pattern=$2 rc=0; shift 2
  timeout 8 "$@" > /dev/null 2> "$T/$log" || rc=$?
  [ $rc -eq 4 ] || fail "$*: exit $rc, want 4: $(head -5 "$T/$log")"
  grep -q -- "$pattern" "$T/$log" || fail "$*: no \"$pattern\" in: $(head -5 "$T/$log")"
}

note "an HTTP server as KB_REDIS"
serve http
HTTP=127.0.0.1:$(cat "$T/port.http")
for cmd in "kb-submit status demo" "kb-scheduler --campaign demo --wait 1 --cache $T/s" \
           "kb-runner --campaign demo --wait 1 --cache $T/c"; do
  # shellcheck disable=SC2086
  KB_REDIS=$HTTP expect4 http.err "$HTTP is not a redis server" "$BIN"/$cmd
  lines=$(wc -l < "$T/http.err")
  [ "$lines" -le 2 ] || fail "$cmd: $lines lines for a peer that is not redis: $(head -3 "$T/http.err")"
done
note "$(tail -1 "$T/http.err")"

note "a peer that drops every connection after PING"
serve drop
DROP=127.0.0.1:$(cat "$T/port.drop")
KB_REDIS=$DROP expect4 drop.err "lost connection to redis at $DROP" "$BIN/kb-submit" status demo
n=$(grep -c "reconnecting" "$T/drop.err" || true)
[ "$n" -le 1 ] || fail "$n reconnecting lines in 3 s, want at most 1: $(head -3 "$T/drop.err")"

note "a redis-server with a password"
mkdir -p "$T/pw"
redis-server --port 0 --unixsocket "$T/pw/redis.sock" --unixsocketperm 700 --dir "$T/pw" \
  --requirepass right-one --save "" --daemonize yes --pidfile "$T/pw/redis.pid" \
  --logfile "$T/pw/redis.log" > /dev/null
for _ in $(seq 100); do [ -S "$T/pw/redis.sock" ] && break; sleep 0.05; done
BG_PIDS+=("$(cat "$T/pw/redis.pid")")
A=unix:$T/pw/redis.sock
export KB_REDIS=$A
unset KB_REDIS_PASSWORD KB_REDIS_PASSWORD_FILE KB_REDIS_USER
expect4 noauth.err "redis at $A wants a password (NOAUTH" "$BIN/kb-submit" status demo
KB_REDIS_PASSWORD=wrong expect4 env.err \
  "redis at $A refused the password from \$KB_REDIS_PASSWORD: WRONGPASS" "$BIN/kb-submit" status demo
echo wrong > "$T/pw/file"; chmod 600 "$T/pw/file"
KB_REDIS_PASSWORD_FILE=$T/pw/file expect4 file.err \
  "refused the password from the file \"$T/pw/file\" (\$KB_REDIS_PASSWORD_FILE): WRONGPASS" \
  "$BIN/kb-submit" status demo
for f in noauth env file; do note "$(cat "$T/$f.err")"; done
rc=0
KB_REDIS_PASSWORD=right-one "$BIN/kb-submit" status demo > /dev/null 2> "$T/ok.err" || rc=$?
[ $rc -ne 4 ] || fail "the right password: exit 4: $(cat "$T/ok.err")"
echo "PASS"
