/* The stored form of a candidate's JSON in Redis, the "json" field of kb:{cid}:cand:<id>: one
 * zstd frame. The first KB__CAND_SAMPLES candidates a process stores for a task are plain
 * frames (level 3); from them it trains the task's dictionary (at most KB__CAND_DICT_BYTES),
 * publishes it once as kb:{cid}:zdict:<task> (SET NX: the first writer's stays, a later
 * writer uses that one) and compresses the task's later candidates with it (level
 * KB__CAND_DICT_LEVEL; the frame names the dictionary's id). A reader decompresses a plain
 * frame as it is, and a frame that names a dictionary with the task's from Redis, which must
 * have that id. Campaigns stored before dictionaries hold plain frames only: still readable.
 *
 * Dictionaries are cached per process (campaign and task; a copy per call, under a mutex, so
 * threads may share it); a writer checks with one GETRANGE before each use that Redis still
 * holds the cached one (a flushed or new server with the same campaign id gets plain frames
 * again until a dictionary is trained there). Until its dictionary exists a task keeps the
 * plain frames it stored as samples: at most KB__CAND_SAMPLES compressed candidates per task.
 */
#ifndef KB_CAND_CODEC_PRIVATE_H
#define KB_CAND_CODEC_PRIVATE_H

#include <stddef.h>

#include "kb/queue.h"

#define KB__CAND_SAMPLES 64        /* plain candidates of a task before its dictionary */
#define KB__CAND_DICT_BYTES 32768  /* the most a task's dictionary holds */
#define KB__CAND_DICT_LEVEL 9      /* zstd level of frames made with a dictionary */

struct kb_error;

/* Encodes candidate JSON `json` (`len` bytes, borrowed) of task `task` (borrowed) of `q`'s
 * campaign into `*out` (new, kb_free; `*out_len` bytes): a frame with the task's dictionary
 * when one is known, else a plain frame kept as a training sample (the KB__CAND_SAMPLES-th
 * trains and publishes the dictionary; samples zstd cannot learn from are dropped and the task
 * stays plain). Errors: KB_EINVAL (task id too long), KB_ECONN, KB_EREDIS, KB_EPARSE (the
 * key kb:{cid}:zdict:<task> holds no dictionary), KB_ENOMEM, KB_EINTERNAL. */
int kb__cand_encode(struct kb_queue *q, const char *task, const char *json, size_t len,
                    void **out, size_t *out_len, struct kb_error *err);
/* Decodes stored value `z` (`zlen` bytes, borrowed) of a candidate of `task` (borrowed) into
 * `*json` (new, kb_free, NUL-terminated; `*json_len` bytes), at most `max_len` bytes. Errors:
 * KB_EPARSE (corrupt or truncated frame, oversized, the task's dictionary missing from Redis
 * or of another id), KB_EINVAL (task id too long), KB_ECONN, KB_EREDIS, KB_ENOMEM. */
int kb__cand_decode(struct kb_queue *q, const char *task, const void *z, size_t zlen,
                    size_t max_len, char **json, size_t *json_len, struct kb_error *err);
/* Empties the process's cache of dictionaries and samples (tests; safe to call at any time
 * no other thread encodes or decodes). */
void kb__cand_codec_reset(void);

#endif
