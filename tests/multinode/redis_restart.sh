#!/usr/bin/env bash
# (c) Redis restarted from its AOF mid-campaign: once a few items are done, the redis-server on
# kbmn-n1 is shut down (SHUTDOWN: the AOF is fsynced), stays down 3 s, and starts again on the
# same AOF. The scheduler (kbmn-n2) and the runners (kbmn-n3, kbmn-n4) reconnect; nothing done
# before the restart is lost or done again, the campaign completes, the ledger is exact.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/lib.sh"
mn_ready
restore() {
  rcli ping > /dev/null 2>&1 || bash "$MN_SCRIPT" redis-start "$MN_STATE" || true
  mn_cleanup
}
trap restore EXIT
cid=mnredis$$  # a fresh campaign id: the Redis keeps the campaigns of earlier runs
t0=$(date +%s)
mn_campaign $cid 20 "$(mn_tasks row_sum 3)" 5
mn_launch $cid 2
four_done() { [ "$(results_n $cid)" -ge 4 ]; }
wait_until 60 "4 items done" four_done
# clients of the campaign's jobs: connections from the nodes (not the test's, from kbmn-ctl)
job_clients() { rcli CLIENT LIST | grep -c 'addr=10\.254\.77\.1[2-4]:' || true; }
before_clients=$(job_clients)
before_id=$(rcli INFO server | sed -n 's/^run_id:\(.*\)\r$/\1/p')
done_before=$(results_n $cid)
[ "$(meta $cid state)" = running ] || fail "the campaign ended before the restart"
note "restarting redis with $done_before items done and $before_clients job connections"
bash "$MN_SCRIPT" redis-stop "$MN_STATE" || fail "redis-stop failed"
sleep 3
bash "$MN_SCRIPT" redis-start "$MN_STATE" || fail "redis-start failed"
after_id=$(rcli INFO server | sed -n 's/^run_id:\(.*\)\r$/\1/p')
[ -n "$after_id" ] && [ "$after_id" != "$before_id" ] || fail "redis was not restarted (run_id $before_id)"
done_loaded=$(results_n $cid)
[ "$done_loaded" -ge "$done_before" ] || fail "$done_before items done before the restart, $done_loaded after loading the AOF"
reconnected() { [ "$(job_clients)" -ge 3 ]; }
wait_until 30 "the scheduler and runners to reconnect" reconnected
after_clients=$(job_clients)
mn_finish $cid 120
[ "$RETRIED" -eq 0 ] || fail "$RETRIED rows are not first attempts (a lease lost in the restart)"
[ "$NODES" = kbmn-n3,kbmn-n4 ] || fail "rows recorded by runners on $NODES only"
echo "multinode redis_restart: items=$ITEMS rows=$ROWS duplicates=0 ledger_spent_ms=$SPENT=rows_cost_ms done_before_restart=$done_before done_after_aof_load=$done_loaded job_connections_before=$before_clients job_connections_after=$after_clients reconnect_log_lines=$RECONNECTS retried=$RETRIED runner_nodes=$NODES seconds=$(($(date +%s) - t0))"
