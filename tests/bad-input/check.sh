#!/bin/sh
# One bad-input case: check.sh KB_SUBMIT CASE_DIR
#
# CASE_DIR holds campaign.json (and, when the case is about a task, its bundles under tasks/),
# expected.txt with the text the error message must contain ("campaign.json:5:19: ..." or
# "task.json:3:5: ..."), and optionally an empty file named not-schema.
#
# Passes when `KB_SUBMIT validate CASE_DIR/campaign.json`
#   - exits with 3 (malformed input),
#   - prints nothing on stdout,
#   - prints the text of expected.txt on stderr;
# and `KB_SUBMIT submit` of it exits with 3 with the same text, before connecting to Redis
#   (unless the case holds an empty file named validate-only);
# and, checking the schemas against the C parser, when tests/schema/validate.py
#   - rejects the file expected.txt names (campaign.json, or the task.json files of the case),
#     or, for a case marked not-schema (an error JSON Schema cannot see: a missing file, a
#     name that must match another field), accepts them;
#   - accepts the case's campaign.json when the case is about a task.
# The interpreter for validate.py is $KB_PYTHON (default /usr/bin/python3).
set -u

if [ $# -ne 2 ]; then
  echo "usage: check.sh KB_SUBMIT CASE_DIR" >&2
  exit 2
fi
submit=$1
dir=$2
here=$(cd "$(dirname "$0")" && pwd)
python=${KB_PYTHON:-/usr/bin/python3}
validate=$here/../schema/validate.py
name=$(basename "$dir")

fail() {
  echo "$name: $*" >&2
  exit 1
}

[ -x "$submit" ] || fail "no kb-submit at $submit"
[ -f "$dir/expected.txt" ] || fail "no expected.txt"
expected=$(cat "$dir/expected.txt")
[ -n "$expected" ] || fail "expected.txt is empty"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kb-bad-input.XXXXXX") || fail "mktemp failed"
trap 'rm -rf "$tmp"' EXIT

"$submit" validate "$dir/campaign.json" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
if [ "$rc" -ne 3 ]; then
  cat "$tmp/stderr" >&2
  fail "kb-submit validate exited with $rc, want 3"
fi
if [ -s "$tmp/stdout" ]; then
  cat "$tmp/stdout" >&2
  fail "kb-submit validate wrote to stdout"
fi
if ! grep -qF -- "$expected" "$tmp/stderr"; then
  echo "got:  $(cat "$tmp/stderr")" >&2
  echo "want: $expected" >&2
  fail "the message differs"
fi

# kb-submit submit refuses the same input with the same message, before any connection (the
# address below has no server: reaching it would exit 4, not 3).
# A case marked validate-only (an oracle that does not build: only validate builds oracles)
# skips this.
if [ ! -e "$dir/validate-only" ]; then
  KB_REDIS=127.0.0.1:1 "$submit" submit "$dir/campaign.json" >"$tmp/stdout" 2>"$tmp/stderr"
  rc=$?
  [ "$rc" -eq 3 ] || fail "kb-submit submit exited with $rc, want 3: $(cat "$tmp/stderr")"
  grep -qF -- "$expected" "$tmp/stderr" || fail "kb-submit submit said: $(cat "$tmp/stderr")"
fi

# The schema side.
case $expected in
  task.json:*)
    kind=task
    files=$(find "$dir" -name task.json | sort)
    [ -n "$files" ] || fail "expected.txt names task.json but the case has none"
    if ! "$python" "$validate" campaign "$dir/campaign.json" 2>"$tmp/schema"; then
      cat "$tmp/schema" >&2
      fail "the campaign schema rejects campaign.json of a task case"
    fi
    ;;
  campaign.json:*)
    kind=campaign
    files=$dir/campaign.json
    ;;
  *)
    fail "expected.txt must start with campaign.json: or task.json:"
    ;;
esac
# shellcheck disable=SC2086 # task.json paths of the suite have no blanks
"$python" "$validate" "$kind" $files >"$tmp/schema" 2>&1
schema_rc=$?
if [ -e "$dir/not-schema" ]; then
  if [ "$schema_rc" -ne 0 ]; then
    cat "$tmp/schema" >&2
    fail "marked not-schema, but the $kind schema rejects it (remove not-schema)"
  fi
elif [ "$schema_rc" -ne 1 ]; then
  cat "$tmp/schema" >&2
  fail "the $kind schema accepts what kb-submit rejects (exit $schema_rc)"
fi
exit 0
