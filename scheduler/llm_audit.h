/* The LLM audit in the task files: copies the entries gen_llm.c appends to the redis stream
 * kb:{cid}:llm:<task> (one per finished request: kind, charge, status, tokens, the zstd-compressed
 * prompt and response, ...) into the task's HDF5 file (/llm, kb__store_add_llm).
 *
 * The redis entry comes first and stays (nothing trims the stream, so a file rebuilt from redis
 * gets its exchanges back); the file is the cursor: entries after kb__store_llm_last_entry() are
 * read, and a kill -9 before the next kb__store_flush() makes the restarted scheduler read them
 * again (the store cuts uncommitted rows, and adds a request id only once).
 */
#ifndef KB_SCHED_LLM_AUDIT_H
#define KB_SCHED_LLM_AUDIT_H

struct kb_error;
struct kb_queue;
struct kb_store;

/* Copies the entries of task `task` (borrowed) newer than the store's last one from redis (through
 * `q`, borrowed) into `store` (borrowed); does not flush. `*added` (may be NULL) gets the rows
 * written. An entry that cannot be decoded (a corrupt compressed text) is stored with the text
 * replaced by a note, so that it is not read again forever. Errors: KB_EREDIS, those of
 * kb__store_add_llm, KB_ENOMEM. */
int kb__llm_audit_sync(struct kb_queue *q, struct kb_store *store, const char *task, long *added,
                      struct kb_error *err);

#endif
