/* The LLM audit in the task files: copies the entries gen_llm.c appends to the redis stream
 * kb:{cid}:llm:<task> (one per finished request: kind, charge, status, tokens, the zstd-compressed
 * prompt and response, ...) into the task's HDF5 file (/llm, kb__store_add_llm).
 *
 * The redis entry comes first and stays (nothing trims the stream, so a file rebuilt from redis
 * gets its exchanges back); the file is the cursor: entries after kb__store_llm_last_entry() are
 * read, and a kill -9 before the next kb__store_flush() makes the restarted scheduler read them
 * again (the store cuts uncommitted rows, and adds a request id only once).
 *
 * Written ahead: each request is recorded in kb:{cid}:gen:llm:sent before it is sent
 * (kb__llm_audit_ahead); its stream entry completes it (kb__llm_audit_settled deletes the
 * record), and a record a killed scheduler left becomes a "lost" entry (kb__llm_audit_lost).
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

/* The request as it goes out (all borrowed): what kb__llm_audit_ahead records. */
struct kb_llm_sent {
  const char *task;       /* task id */
  const char *charge;     /* the request's charge id, "llm:<task>:<seq>" */
  const char *kind;       /* prompt kind name ("translate", "mutate", ...) */
  const char *model;      /* model name sent */
  const char *parents;    /* parent candidate ids, comma-separated, "" for none */
  const char *prompt;     /* "[system]\n...\n[user]\n..." as sent */
};

/* Write-ahead: records request `s` in the hash kb:{cid}:gen:llm:sent (keys.h) with the time
 * now, before it is sent, so that a scheduler killed while it is in flight leaves the prompt
 * recorded. Errors: KB_EREDIS, KB_ECONN, KB_ENOMEM. */
int kb__llm_audit_ahead(struct kb_queue *q, const struct kb_llm_sent *s, struct kb_error *err);
/* Deletes the write-ahead record of `charge` (borrowed) once its audit entry is in the stream.
 * Errors: KB_EREDIS, KB_ECONN. */
int kb__llm_audit_settled(struct kb_queue *q, const char *charge, struct kb_error *err);
/* Completes every write-ahead record left in the hash (a scheduler killed with requests in
 * flight, or stopped before their answers): each becomes an audit stream entry with status
 * "lost", its prompt, model, kind, parents and "sent_ms", no response, no tokens and `why`
 * (borrowed) as its error, unless the stream's last entries already hold that charge (killed
 * between the entry and the delete); then the record is deleted. `charge` NULL does them all,
 * else only that one. `*n` (may be NULL) gets how many were written. A record that does not
 * decode is written with the text it holds as its prompt. Errors: KB_EREDIS, KB_ECONN,
 * KB_ENOMEM. */
int kb__llm_audit_lost(struct kb_queue *q, const char *charge, const char *why, int *n,
                       struct kb_error *err);

#endif
