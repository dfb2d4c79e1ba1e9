#!/usr/bin/env bash
# What every program says to --version, --help and a bad command line (docs/cli.md): the version
# line on stdout with exit 0; the help on stdout with exit 0; a usage error as one line naming
# the problem plus "Try '<prog> --help' ..." on stderr with exit 2, nothing on stdout.
# usage: commands.sh BIN_DIR
set -uo pipefail
bin=$1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
# run PROG ARGS...: sets rc, out, err
run() { "$bin/$1" "${@:2}" > "$out" 2> "$err"; rc=$?; }

progs="kb-submit kb-runner kb-scheduler kb-launch kb-sandbox kb-bench-queue kb-bench-ladder
       kb-test-eval kb-test-torch-eval kb-eval"
for p in $progs; do
  run "$p" --version
  grep -Eqx "$p [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{12}|unknown)\)" "$out" && [ $rc -eq 0 ] ||
    fail "$p --version: exit $rc, stdout: $(head -c 200 "$out")"
  [ -s "$err" ] && fail "$p --version wrote on stderr: $(head -c 200 "$err")"
  run "$p" --help
  ok=0
  if [ $rc -eq 0 ] && grep -q "^usage: $p" "$out"; then
    ok=1
    [[ $p == kb-test-* ]] || grep -q -- "--version" "$out" || ok=0 # the test tools: one line
  fi
  [ $ok -eq 1 ] || fail "$p --help: exit $rc, stdout: $(head -c 200 "$out")"
  run "$p" --no-such-option
  lines=$(wc -l < "$err")
  [ $rc -eq 2 ] && [ "$lines" -eq 2 ] && [ ! -s "$out" ] &&
    grep -q "no-such-option" "$err" && grep -qx "Try '$p --help' for more information." "$err" ||
    fail "$p --no-such-option: exit $rc, $lines stderr lines: $(head -c 300 "$err")"
done

# missing or contradictory arguments: one line that names them, then the hint
check_usage() { # PATTERN PROG ARGS...
  local pat=$1; shift
  run "$@"
  [ $rc -eq 2 ] && [ "$(wc -l < "$err")" -eq 2 ] && grep -q -- "$pat" "$err" ||
    fail "$*: exit $rc, stderr: $(head -c 300 "$err")"
}
check_usage "missing --campaign" kb-runner
check_usage "below --min-tier 3" kb-runner --campaign c --min-tier 3 --max-tier 1
check_usage "missing --campaign" kb-scheduler
check_usage "missing the command" kb-submit
check_usage "missing the campaign file" kb-submit status
check_usage "unknown command" kb-submit frobnicate c.json
check_usage "missing the command" kb-submit archive
check_usage "--runners" kb-launch --local --runners x c.json
check_usage "missing TASK_DIR" kb-test-eval --backend host

[ $fails -eq 0 ] && echo "commands: all checks passed" || echo "commands: $fails failed"
exit $((fails > 0))
