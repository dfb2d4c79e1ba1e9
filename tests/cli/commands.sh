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
  grep -Eqx "$p [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)" "$out" && [ $rc -eq 0 ] ||
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
check_usage "not a campaign id" kb-runner --campaign "Softmax Sweep"
check_usage "not a campaign id" kb-scheduler --campaign ""
check_usage "missing the command" kb-submit
check_usage "missing the campaign file" kb-submit status
check_usage "unknown command" kb-submit frobnicate c.json
check_usage 'unknown command "frobnicate"' kb-submit frobnicate
check_usage "archive takes its options after it" kb-submit -q archive list
check_usage "missing the command" kb-submit archive
check_usage "--runners" kb-launch --local --runners x c.json
# a campaign argument that is neither a file nor an id: bad input (3), before any connection
run kb-submit status "Softmax Sweep"
[ $rc -eq 3 ] && grep -q "neither a campaign file" "$err" && ! grep -q redis "$err" ||
  fail "kb-submit status 'Softmax Sweep': exit $rc, stderr: $(head -c 300 "$err")"
check_usage "missing TASK_DIR" kb-test-eval --backend host

# every kb-submit command's own help: its usage line on stdout, exit 0, wherever --help stands
for c in validate submit status watch drain cancel report export; do
  for args in "$c --help" "--help $c" "-r 127.0.0.1:1 $c -h"; do
    run kb-submit $args
    case $c in validate|submit) what=CAMPAIGN.json ;; report|export) what="ID|CAMPAIGN.json|DIR" ;;
      *) what="ID|CAMPAIGN.json" ;; esac
    [ $rc -eq 0 ] && [ "$(head -1 "$out")" = "usage: kb-submit [options] $c $what" ] &&
      grep -q "^exit codes:" "$out" ||
      fail "kb-submit $args: exit $rc, stdout: $(head -c 200 "$out")"
  done
done
run kb-submit archive --help
[ $rc -eq 0 ] && grep -q "^usage: kb-submit archive" "$out" || fail "kb-submit archive --help: exit $rc"
run kb-submit --help
[ $rc -eq 0 ] && grep -q "^usage: kb-submit \[options\] COMMAND ARG" "$out" || fail "kb-submit --help: exit $rc"

# --gpus with a host campaign, --runners with a cuda one: usage errors, before anything starts
src=${KB_SRC:-$(dirname "$0")/../..}
check_usage "host backend; --gpus goes with cuda" kb-launch --local --gpus 0 "$src/examples/demo/campaign.json"
check_usage "instead of --runners" kb-launch --local --runners 2 "$src/examples/suite/campaign.json"
check_usage "--tier goes with export" kb-submit --tier full report x

# the Python tools' copies in bin/: the same --version line, and a usage error as one line plus
# the hint
py=${KB_PY:-/usr/bin/python3}
for t in kb-task-check export_pool.py kbresults.py; do
  "$py" "$bin/$t" --version > "$out" 2> "$err"; rc=$?
  grep -Eqx "$t [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)" "$out" && [ $rc -eq 0 ] ||
    fail "$t --version: exit $rc, stdout: $(head -c 200 "$out") $(head -c 200 "$err")"
done
"$py" "$bin/kb-task-check" --no-such-option > "$out" 2> "$err"; rc=$?
[ $rc -eq 2 ] && grep -qx "Try 'kb-task-check --help' for more information." "$err" ||
  fail "kb-task-check --no-such-option: exit $rc, stderr: $(head -c 200 "$err")"

[ $fails -eq 0 ] && echo "commands: all checks passed" || echo "commands: $fails failed"
exit $((fails > 0))
