#!/usr/bin/env bash
# (d) The link to the Redis host drops for 30 s: once a few items are done, the bridge side of
# kbmn-n1's veth goes down (`ip link set ... down`: its cable pulled) and comes back up 30 s
# later. The scheduler (kbmn-n2) and the runners (kbmn-n3, kbmn-n4) cannot reach Redis meanwhile
# (checked: a PING from kbmn-n3 fails; inside kbmn-n1 Redis answers). Leases last 120 s, so
# nothing is reaped: every process carries on where it stopped, the campaign completes, every
# item once, the ledger exact, every row a first attempt. The summary says how many of the
# jobs' connections survived the drop (TCP retransmits) and how many were made anew.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
source "$(dirname "$0")/lib.sh"
mn_ready
relink() {
  bash "$MN_SCRIPT" link "$MN_STATE" n1 up || true
  mn_cleanup
}
trap relink EXIT
cid=mnlink$$  # a fresh campaign id: the Redis keeps the campaigns of earlier runs
t0=$(date +%s)
mn_campaign $cid 120 "$(mn_tasks row_sum 3)" 5
mn_launch $cid 2
four_done() { [ "$(results_n $cid)" -ge 4 ]; }
wait_until 60 "4 items done" four_done
# the jobs' connections (scheduler and runners, not the test's from kbmn-ctl), by client id
job_clients() { rcli CLIENT LIST | grep -E 'addr=10\.254\.77\.1[2-4]:' | sed 's/^id=\([0-9]*\) .*/\1/' | sort; }
job_clients > "$T/clients-before.txt"
[ "$(meta $cid state)" = running ] || fail "the campaign ended before the link dropped"
done_before=$(results_n $cid)
note "link of kbmn-n1 down with $done_before items done, $(wc -l < "$T/clients-before.txt") job connections"
bash "$MN_SCRIPT" link "$MN_STATE" n1 down
t_down=$(date +%s)
sleep 3
if REDISCLI_AUTH=$(cat "$KB_REDIS_PASSWORD_FILE") nsenter --net=/run/netns/kbmn-n3 timeout 3 \
  redis-cli --no-auth-warning --user "$KB_REDIS_USER" -h "${KB_REDIS%:*}" -p "${KB_REDIS##*:}" ping 2> /dev/null | grep -q PONG; then
  fail "kbmn-n3 still reaches redis with the link down"
fi
# from inside kbmn-n1: the test's own namespace is cut off too
done_during=$(REDISCLI_AUTH=$(cat "$KB_REDIS_PASSWORD_FILE") nsenter --net=/run/netns/kbmn-n1 \
  timeout 5 redis-cli --no-auth-warning --user "$KB_REDIS_USER" -h "${KB_REDIS%:*}" -p "${KB_REDIS##*:}" \
  HGET "kb:{$cid}:meta" done) || fail "redis does not answer inside kbmn-n1 with the link down"
sleep $((30 - ($(date +%s) - t_down)))
bash "$MN_SCRIPT" link "$MN_STATE" n1 up
t_up=$(date +%s)
note "link up after $((t_up - t_down)) s; $done_during items done meanwhile "
more_done() { [ "$(results_n $cid)" -gt "$done_during" ] || [ "$(meta $cid state)" = done ]; }
wait_until 90 "a result after the link came back" more_done
resumed_s=$(($(date +%s) - t_up))
# TCP_USER_TIMEOUT (common/src/redis.c) ends a connection whose data went unacknowledged, so the
# reconnect loop (backoff capped at 2 s) is back within seconds; without it the kernel's
# retransmission backoff made this 23-25 s
[ "$resumed_s" -le 10 ] || fail "the first result came $resumed_s s after the link came back (at most 10)"
job_clients > "$T/clients-after.txt"
kept=$(comm -12 "$T/clients-before.txt" "$T/clients-after.txt" | wc -l)
new=$(comm -13 "$T/clients-before.txt" "$T/clients-after.txt" | wc -l)
mn_finish $cid 150
[ "$RETRIED" -eq 0 ] || fail "$RETRIED rows are not first attempts (a lease reaped during the drop)"
[ "$NODES" = kbmn-n3,kbmn-n4 ] || fail "rows recorded by runners on $NODES only"
echo "multinode link_drop: items=$ITEMS rows=$ROWS duplicates=0 ledger_spent_ms=$SPENT=rows_cost_ms link_down_s=$((t_up - t_down)) done_before=$done_before done_during=$done_during first_result_after_up_s=$resumed_s job_connections_kept=$kept job_connections_new=$new reconnect_log_lines=$RECONNECTS retried=$RETRIED runner_nodes=$NODES seconds=$(($(date +%s) - t0))"
