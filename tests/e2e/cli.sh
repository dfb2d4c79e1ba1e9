#!/usr/bin/env bash
# Every command: --help on stdout with exit 0; bad usage exit 2 on stderr; redis unreachable
# exit 4 with a message naming the address; validate writes nothing and exits 3 on bad input.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
for p in kb-submit kb-scheduler kb-runner kb-launch; do
  "$BIN/$p" --help > "$T/help.txt" 2> "$T/help.err" || fail "$p --help failed"
  grep -q "^usage: $p" "$T/help.txt" || fail "$p --help prints no usage line"
  grep -q "exit codes" "$T/help.txt" || fail "$p --help documents no exit codes"
  [ ! -s "$T/help.err" ] || fail "$p --help wrote to stderr"
  rc=0; "$BIN/$p" --no-such-option > "$T/out.txt" 2> "$T/err.txt" || rc=$?
  [ $rc -eq 2 ] || fail "$p with a bad option: exit $rc, want 2"
  [ ! -s "$T/out.txt" ] || fail "$p usage error wrote to stdout"
done
"$BIN/kb-runner" --list-devices --json > "$T/dev.json" || fail "--list-devices failed"
$KB_PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["devices"] or d["why_none"], d' \
  "$T/dev.json" || fail "--list-devices --json: $(cat "$T/dev.json")"
make_campaign cli
"$BIN/kb-submit" validate "$T/cli.json" > "$T/v.txt" || fail "validate failed"
grep -q 'is valid: 2 tasks, 4 seed candidates' "$T/v.txt" || fail "validate: $(cat "$T/v.txt")"
"$BIN/kb-submit" --json validate "$T/cli.json" | grep -q '"valid":true' || fail "validate --json"
rc=0; "$BIN/kb-submit" --redis 127.0.0.1:1 submit "$T/cli.json" 2> "$T/e.txt" || rc=$?
[ $rc -eq 4 ] || fail "unreachable redis: exit $rc, want 4"
grep -q "127.0.0.1:1" "$T/e.txt" || fail "message does not name the address: $(cat "$T/e.txt")"
rc=0; "$BIN/kb-runner" --campaign cli --redis 127.0.0.1:1 --wait 1 2> "$T/e.txt" || rc=$?
[ $rc -eq 4 ] || fail "runner with unreachable redis: exit $rc, want 4"
rc=0; "$BIN/kb-submit" status "$T/missing.json" 2> "$T/e.txt" || rc=$?
[ $rc -ne 0 ] || fail "status of a missing campaign succeeded"
start_redis
rc=0; "$BIN/kb-submit" status nosuch 2> "$T/e.txt" || rc=$?
[ $rc -eq 1 ] && grep -q 'no campaign "nosuch"' "$T/e.txt" || fail "status nosuch: $rc $(cat "$T/e.txt")"
echo "PASS"
