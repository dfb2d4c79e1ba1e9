#!/bin/sh
# One degenerate-task case: check_degenerate.sh KB_TASK_CHECK CASE_DIR
# CASE_DIR holds task.json, "status" (the exit status kb-task-check must give) and expected.txt
# (lines that must each appear in its output, stdout and stderr together).
set -u
if [ $# -ne 2 ]; then
  echo "usage: check_degenerate.sh KB_TASK_CHECK CASE_DIR" >&2
  exit 2
fi
out=$("$1" "$2" 2>&1)
rc=$?
want=$(cat "$2/status")
printf '%s\n' "$out"
if [ "$rc" != "$want" ]; then
  echo "FAIL: exit status $rc, expected $want" >&2
  exit 1
fi
while IFS= read -r line; do
  [ -z "$line" ] && continue
  case $out in
    *"$line"*) ;;
    *) echo "FAIL: output lacks: $line" >&2; exit 1 ;;
  esac
done < "$2/expected.txt"
echo "ok"
