#!/usr/bin/env bash
# The confinement census on the GPU machine (docs/sandbox.md, "Confinement"): from the
# repository root after ../shared/gpu/bundle.sh .gpu build/bin/kb-sandbox build/bin/kb-sandbox-cuda
# build/bin/kb-test-eval /usr/bin/strace and mkdir .gpu/cand; cp tests/catalogue/host/sys_{proc_environ,proc_environ_call,socket,honest}.c .gpu/cand/,
# on the device: bash scripts/gpu-confine-census.sh (outputs under $OUT; prints the summary).
set -u
R=$PWD
export LD_LIBRARY_PATH=$R/.gpu/lib PATH=$R/.gpu/bin:$PATH KB_INCLUDE_DIR=$R/common/include
S=$OUT/summary.txt
{ date -u; id; uname -r; which strace nvcc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > $S 2>&1
mkdir -p /tmp/w /tmp/st
printf '#!/bin/sh\nKB_CONFINE_CENSUS=1 exec %s/.gpu/bin/kb-sandbox-cuda "$@" 2>>%s/census-cuda.txt\n' "$R" "$OUT" > /tmp/w/kb-sandbox-cuda
printf '#!/bin/sh\nexec strace -D -f -qq -o /tmp/st/t.$$ %s/.gpu/bin/kb-sandbox-cuda "$@"\n' "$R" > /tmp/st/kb-sandbox-cuda
chmod +x /tmp/w/kb-sandbox-cuda /tmp/st/kb-sandbox-cuda
C=$(mktemp -d); RT=tests/runner/candidates/cuda_runtime
echo "## 1 census (cuda, tiers 1-3)" >> $S
KB_SANDBOX_DIR=/tmp/w timeout 100 kb-test-eval --backend cuda --cache $C --tiers 123 tasks/cuda/rowsum_small $RT/rowsum_thread.cu > $OUT/census-eval.txt 2>&1; echo "rc $?" >> $S
echo "## 2 confined (cuda, tiers 1-3) + illegal address" >> $S
KB_SANDBOX_DIR=$R/.gpu/bin timeout 100 kb-test-eval --backend cuda --cache $C --tiers 123 tasks/cuda/rowsum_small $RT/rowsum_thread.cu $RT/illegal_address.cu > $OUT/confined-eval.txt 2>&1; echo "rc $?" >> $S
echo "## 3 root: /proc of the parent (host sandbox)" >> $S
export KB_TEST_SECRET=canary-$RANDOM$RANDOM$RANDOM
KB_SANDBOX_DIR=$R/.gpu/bin timeout 60 kb-test-eval --backend host --cache $C --tiers 1 tasks/host/row_sum .gpu/cand/sys_proc_environ.c .gpu/cand/sys_proc_environ_call.c .gpu/cand/sys_socket.c .gpu/cand/sys_honest.c > $OUT/root-host.txt 2>&1; echo "rc $?; canary hits: $(grep -c "$KB_TEST_SECRET" $OUT/root-host.txt)" >> $S
unset KB_TEST_SECRET
echo "## 4 strace of a confined cuda sandbox, calls after seccomp()" >> $S
if which strace >/dev/null 2>&1; then
KB_SANDBOX_DIR=/tmp/st timeout 60 kb-test-eval --backend cuda --cache $C --tiers 13 tasks/cuda/rowsum_small > $OUT/strace-eval.txt 2>&1; echo "rc $?" >> $S
for f in /tmp/st/t.*; do awk '/seccomp\(SECCOMP_SET_MODE_FILTER/{p=1;next} p' $f; done | sed -E 's/^[0-9]+ +//' | grep -v '^<\|resumed>\|^---\|^+++' | sed -E 's/\(.*//' | sort | uniq -c | sort -rn > $OUT/strace-after.txt
for f in /tmp/st/t.*; do awk '/seccomp\(SECCOMP_SET_MODE_FILTER/{p=1;next} p' $f; done | grep -E 'openat|clone|SIGSYS|killed' | cut -c1-200 | sort | uniq -c | sort -rn | head -40 >> $OUT/strace-after.txt
ls /tmp/st | wc -l >> $S
fi
sort $OUT/census-cuda.txt | uniq -c | sort -rn | head -60 >> $S
cat $S
