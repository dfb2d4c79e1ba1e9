#!/usr/bin/env bash
# A compiler outlives no killed runner (runner/guard/guard.h): kb-eval (the runner's evaluator
# and compile path) builds a host candidate with a `cc` that starts a child and sleeps; the
# evaluator is killed with SIGKILL while it compiles; the compiler and its child must be gone
# within 3 s. Then the same with the guard missing (KB_SANDBOX_DIR without kb-tool-guard): the
# compiler must be found still running, so the first half cannot pass by accident, and the
# runner must have said that the guard is missing.
# usage: tool_guard.sh BIN_DIR SOURCE_DIR
set -uo pipefail
bin=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
dir=$(mktemp -d)
cleanup() {
  for f in "$dir"/run*/cc.pid "$dir"/run*/child.pid; do
    [ -s "$f" ] && kill -9 "$(cat "$f")" 2> /dev/null
  done
  rm -rf "$dir"
}
trap cleanup EXIT
real_cc=$(command -v cc)

# alive PID: 0 while the process runs (not a zombie)
alive() { [ -r "/proc/$1/stat" ] && ! awk '{exit !($3 == "Z")}' "/proc/$1/stat"; }

attempt() { # NAME [ENV...]: starts kb-eval with the slow cc, kills it mid-compile
  local name=$1 run=$dir/$1; shift
  mkdir -p "$run/bin"
  cat > "$run/bin/cc" <<SH
#!/bin/sh
case "\$*" in *--version*|*-dumpversion*|*-dumpmachine*) exec $real_cc "\$@";; esac
echo \$\$ > "$run/cc.pid"
sleep 300 &
echo \$! > "$run/child.pid"
wait
SH
  chmod +x "$run/bin/cc"
  env PATH="$run/bin:$PATH" "$@" "$bin/kb-eval" --cache "$run/cache" --tiers smoke \
    "$src/tasks/host/gelu" "$(ls "$src"/tasks/host/gelu/seeds/*.c | head -1)" \
    > "$run/out" 2> "$run/err" &
  local eval_pid=$!
  for _ in $(seq 200); do [ -s "$run/child.pid" ] && break; sleep 0.05; done
  [ -s "$run/child.pid" ] || { fail "$name: the slow cc never ran: $(head -c 300 "$run/err")"; return 1; }
  kill -9 "$eval_pid"
  wait "$eval_pid" 2> /dev/null
  cc_pid=$(cat "$run/cc.pid") child_pid=$(cat "$run/child.pid")
  gone=0
  for _ in $(seq 60); do
    if ! alive "$cc_pid" && ! alive "$child_pid"; then gone=1; break; fi
    sleep 0.05
  done
}

attempt guarded
[ "$gone" = 1 ] || fail "the compiler ($cc_pid) or its child ($child_pid) outlived the killed kb-eval by 3 s"
[ "$gone" = 1 ] && echo "guarded: the compiler and its child ended with the killed kb-eval"

# without the guard: the sandbox found, kb-tool-guard not
mkdir -p "$dir/noguard"
for f in "$bin"/kb-sandbox* "$bin"/kb_sandbox_torch.py "$bin"/kb_build_modelnew.py; do
  [ -e "$f" ] && ln -s "$f" "$dir/noguard/"
done
attempt unguarded KB_SANDBOX_DIR="$dir/noguard"
[ "$gone" = 0 ] || fail "without kb-tool-guard the compiler ended too: this test shows nothing"
grep -q "kb-tool-guard not found" "$dir/unguarded/err" ||
  fail "no word that the guard is missing: $(head -c 300 "$dir/unguarded/err")"
[ "$gone" = 0 ] && echo "unguarded (the guard hidden): the compiler ran on, as before the guard"
exit $((fails > 0))
