/* The Redis keys of a campaign: every key name is spelled here and nowhere else in C.
 *
 * A key is "kb:{<cid>}:<suffix>" (kb_key() in kb/redis.h, kb_queue_key() in kb/queue.h); the
 * hash tag {cid} keeps a campaign on one Redis Cluster slot. The macros below are the suffixes;
 * those ending in _FMT are printf formats (kb_key() takes them directly), those ending in _ANY
 * are SCAN MATCH patterns. The Lua scripts of common/lua/ get their keys in KEYS[] (built from
 * these macros by queue.c, ledger.c and friends), never by name; each entry says which scripts
 * touch the key, who else writes it, and how. Writes made outside a script are listed, with
 * their reasons, in docs/architecture.md ("Writes outside Lua scripts").
 */
#ifndef KB_KEYS_H
#define KB_KEYS_H

/* hash: state, spec, tiers, max_attempts, lease_ms, layout (the items' layout, "2": kb/item.h;
 * absent in campaigns of layout 1, which the scripts refuse), open, done, dead, task_caps ("1" once a
 * task cap was set: claims read the caps), stray (results entries dropped),
 * <currency>:overruns and <currency>:overrun (settlements beyond their reservation), tasks
 * (JSON array of the task ids in campaign order), results_dir, deadline, affinity_ms (optional:
 * how long task affinity may pass over the entry a plain claim would take, default 2000, 0 =
 * affinity off; set by hand or by a benchmark), aff ("<item> <ms>": that entry and when it
 * was first passed over) and held:<task> (the runner of the last claim with affinity that took
 * an item of the task; complete_claim writes both).
 * Scripts: register, enqueue, complete_claim, heartbeat, reap, release, set_state, status,
 * stray, task_cap, charge, leases (reads lease_ms). Outside: kb_submission_register writes
 * tasks, results_dir and deadline (one HSET). */
#define KB_KEY_META "meta"
/* hash: item id "<candidate>:<tier>" -> the item's line, layout 2 (kb/item.h):
 * "state|attempt|claims|cost|priority|task|token|runner|charge|result|next" (cost: the
 * reservation, kb_tier_reserve_ms; token and runner the lease's; done and dead items keep the
 * runner and add the charge and the id of the one results entry that settled it; next: the
 * ids of the items the same complete_claim call leased, joined with ","). C reads it with
 * kb_item_parse. Scripts: enqueue, complete_claim, heartbeat, reap, release, retry, status,
 * leases. */
#define KB_KEY_ITEMS "items"
/* zset per tier: ready items by priority (lower first). printf format, the tier (int).
 * Scripts: enqueue, complete_claim, reap, release, status. */
#define KB_KEY_READY_FMT "q:%d"
/* zset: leased items by deadline (Redis TIME, milliseconds).
 * Scripts: complete_claim, heartbeat, reap, release, status, leases. */
#define KB_KEY_LEASE "lease"
/* hash: <currency>:total|available|held|spent (integers).
 * Scripts: register, complete_claim, reap, release, status, charge. */
#define KB_KEY_LEDGER "ledger"
/* hash: charge id -> "H:<held>" | "P:<posted>" | "V:<voided>" ("P:<posted>:O:<overrun>" when
 * the cost exceeded the reservation): GPU charges of claim/complete.
 * Scripts: complete_claim, reap, release, charge (currency gpu_ms). */
#define KB_KEY_CHARGES "charges"
/* hash: as KB_KEY_CHARGES, for the llm_tokens currency. Script: charge. */
#define KB_KEY_CHARGES_LLM "charges:llm_tokens"
/* hash: <task>:cap (optional GPU ms cap), <task>:held, <task>:spent.
 * Scripts: complete_claim, reap, release (held, spent), task_cap (cap). */
#define KB_KEY_TASKBUDGET "taskbudget"
/* stream: one JSON "entry" field per ledger change (ledger-entry schema), from register, reap,
 * release, retry and charge; complete_claim writes one "moves" field per call instead
 * (ledger-moves schema: the call's reserve and settle moves in order, the balances after the
 * last). A move of amount 0 is not logged. Older campaigns' complete_claim entries are "entry"
 * fields, several per stream entry, in order. */
#define KB_KEY_LEDGER_LOG "ledger:log"
/* stream: "item", "result" (result schema), "charge" (the lease settled: complete_claim; the
 * lease's runner and attempt are the done item's), and also "runner", "attempt" (reap, and
 * complete_claim before 2026-12-06); consumer group "scheduler". Scripts: complete_claim, reap
 * (append), stray (XACK). Outside: the scheduler creates the group and acknowledges the
 * entries it processed. */
#define KB_KEY_RESULTS "results"
/* hash: results entry id -> why the scheduler dropped it. Script: stray. */
#define KB_KEY_STRAY "stray"
/* hash: item id -> reason: the dead-letter hash. Items that used max_attempts (reap), and queue
 * or lease entries whose item is missing or does not decode, with the key and field named
 * ("bad state: ..."; kb_item_check in common/lua/lib/prelude.lua). Scripts: reap,
 * complete_claim. */
#define KB_KEY_DEAD "dead"
/* hash: runner -> last heartbeat (ms). Scripts: heartbeat, leases (read). */
#define KB_KEY_RUNNERS "runners"
/* stream: state changes, for watchers. Scripts: register, set_state. */
#define KB_KEY_EVENTS "events"
/* hash per task: spec (task.json text), oracle (source), reference (source), oracle_name
 * (file name of the oracle), torch_reference (source; only when the task names one). printf
 * format, the task id. Outside: kb_catalog_put_task. */
#define KB_KEY_TASK_FMT "task:%s"
#define KB_KEY_TASK_ANY "task:*"
/* hash per candidate: task, name, json (the candidate JSON as one zstd frame: plain, or made
 * with the task's dictionary KB_KEY_ZDICT_FMT when the frame names one; common/src/
 * cand_codec_private.h). printf format, the candidate id. Outside: kb_catalog_put_candidate
 * (submitter, scheduler's generators). */
#define KB_KEY_CAND_FMT "cand:%s"
#define KB_KEY_CAND_ANY "cand:*"
/* string per task: the zstd dictionary (at most 32 KB) the task's candidates are compressed
 * with once a writer stored 64 of them; set once (SET NX), never changed while the campaign
 * lives. printf format, the task id. Outside: kb_catalog_put_candidate (the writer that
 * trained it). */
#define KB_KEY_ZDICT_FMT "zdict:%s"
/* stream per task: the LLM audit, one entry per finished or lost request (kind, charge, status,
 * attempts, tokens_in, tokens_out, candidate, parents, error, prompt, response; see
 * scheduler/gen_llm.h). printf format, the task id. Outside: the scheduler (gen_llm.c). */
#define KB_KEY_LLM_AUDIT_FMT "llm:%s"
/* hash: task -> generation attempts (scheduler/gen_core.h). Outside: the scheduler. */
#define KB_KEY_GEN_COUNT "gen:count"
/* hash: open llm charge id -> task, so a restarted scheduler voids what its predecessor left
 * (scheduler/gen_llm.h). Outside: the scheduler. */
#define KB_KEY_GEN_LLM_OPEN "gen:llm:open"
/* hash: llm charge id -> the request as sent, JSON {"task", "kind", "model", "sent_ms",
 * "parents", "prompt"}, written before the request goes out and deleted once its audit entry
 * is in the stream; what a killed scheduler leaves becomes a "lost" audit entry at the next
 * start (scheduler/llm_audit.h). Outside: the scheduler. */
#define KB_KEY_GEN_LLM_SENT "gen:llm:sent"
/* string: the counter of llm requests, numbering the charge ids. Outside: the scheduler. */
#define KB_KEY_GEN_LLM_SEQ "gen:llm:seq"
/* hash per tune base: knob string -> candidate id (scheduler/gen_tune.h). printf format, the
 * task id and the base candidate id (its first 16 characters). Outside: the scheduler. */
#define KB_KEY_GEN_TUNE_FMT "gen:tune:%s:%.16s"
/* hash: candidate id -> the median in microseconds its last-tier evaluation must beat to get
 * the hardware-metrics pass ("0": no bound), for the candidates the scheduler marks when it
 * enqueues their last-tier item (docs/search.md, "Hardware metrics"); kb-runner --metrics
 * marked reads it before such an evaluation. Outside: the scheduler (writes), kb-runner
 * (reads). */
#define KB_KEY_METRICS "metrics"
/* string, with a time to live: the value "<token> host=H/pidns:[N] pid=P since=MS" of the
 * campaign's one scheduler, renewed while it runs (scheduler/sched_lock.h). Script:
 * sched_lock. */
#define KB_KEY_SCHED_LOCK "scheduler"
/* string: the queue benchmark's debit counter (bench/queue), no other process reads it. */
#define KB_KEY_BENCH_DEBIT "bench:debit"

#endif
