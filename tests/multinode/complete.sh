#!/usr/bin/env bash
# (a) A campaign on the multi-node cluster: kb-launch --slurm (the scheduler job on kbmn-n2, a
# two-task runner array on kbmn-n3 and kbmn-n4) against the Redis on kbmn-n1 over TCP with an ACL
# user and a 0600 password file. It completes; both runner nodes recorded rows; no row twice,
# nothing lost, the ledger exact and equal to the rows' cost.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/lib.sh"
mn_ready
cid=mncomplete$$  # a fresh campaign id: the Redis keeps the campaigns of earlier runs
t0=$(date +%s)
mn_campaign $cid 20 "$(mn_tasks row_sum 3)" 5
mn_launch $cid 2
wait_until 30 "two runner tasks running" bash -c "[ \$(nsenter --net=/run/netns/kbmn-ctl squeue -h -j $A -t RUNNING -o %i | wc -l) -eq 2 ]"
placed=$(runner_nodes | awk '{print $2}' | sort -u | paste -sd,)
[ "$placed" = kbmn-n3,kbmn-n4 ] || fail "runner tasks on $placed, not on kbmn-n3 and kbmn-n4"
mn_finish $cid 120
[ "$NODES" = kbmn-n3,kbmn-n4 ] || fail "rows recorded by runners on $NODES only"
[ "$RETRIED" -eq 0 ] || fail "$RETRIED rows are not first attempts"
echo "multinode complete: items=$ITEMS rows=$ROWS duplicates=0 ledger_spent_ms=$SPENT=rows_cost_ms runner_nodes=$NODES retried=$RETRIED reconnects=$RECONNECTS seconds=$(($(date +%s) - t0))"
