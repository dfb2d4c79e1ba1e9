/* Tasks and candidates of a campaign as stored in Redis, so that runners on compute nodes need
 * nothing but Redis: the task spec and oracle source travel with the campaign.
 * Keys (kb/keys.h): KB_KEY_TASK_FMT kb:{cid}:task:<id>, KB_KEY_CAND_FMT kb:{cid}:cand:<id>,
 * KB_KEY_ZDICT_FMT kb:{cid}:zdict:<task> (the task's candidates' zstd dictionary), and meta's
 * field "tasks" (JSON array of task ids in campaign order).
 */
#ifndef KB_CATALOG_H
#define KB_CATALOG_H

#include "kb/candidate.h"
#include "kb/queue.h"
#include "kb/task.h"

struct kb_error;

/* Stores `task` (borrowed): its spec and the texts of its oracle, reference and torch_reference
 * (when it has one), read from its files. Overwrites. Errors: KB_EINVAL (id too long), KB_EIO
 * (a file), KB_ECONN, KB_ENOMEM. */
int kb_catalog_put_task(struct kb_queue *q, const struct kb_task *task, struct kb_error *err);
/* Loads task `task_id` from Redis into `task` (caller-owned; released on failure): writes the
 * spec, the oracle and the torch_reference (when stored) under `work_dir`/<cid>/<task id>/
 * (created) and parses it from there; task->torch_ref_path is NULL when none was stored.
 * Errors: KB_ENOTFOUND, KB_EPARSE (a corrupt spec), KB_EIO, KB_ENOMEM. */
int kb_catalog_get_task(struct kb_queue *q, const char *task_id, const char *work_dir,
                        struct kb_task *task, struct kb_error *err);
/* Reads the reference source text of `task_id` into `*out` (new, NUL-terminated; kb_free).
 * Errors: KB_EINVAL (id too long), KB_ENOTFOUND (no reference), KB_ECONN, KB_ENOMEM. */
int kb_catalog_get_reference(struct kb_queue *q, const char *task_id, char **out,
                             struct kb_error *err);
/* Stores candidate `c` (borrowed): one HSET of task, name and the JSON as one zstd frame,
 * with the task's dictionary once there is one (common/src/cand_codec_private.h: the 64th
 * candidate a process stores for a task trains it and stores it as kb:{cid}:zdict:<task>). Its
 * id is the hash of its content, so storing it again stores the same candidate. Errors:
 * KB_EINVAL (id too long), KB_ECONN, KB_EREDIS, KB_EPARSE (the task's dictionary key holds no
 * dictionary), KB_ENOMEM. */
int kb_catalog_put_candidate(struct kb_queue *q, const struct kb_candidate *c,
                             struct kb_error *err);
/* Loads candidate `id` into `c` (caller-owned; released on failure) and verifies its id; reads
 * plain frames (all that campaigns stored before dictionaries hold) and frames made with the
 * task's dictionary. Errors: KB_ENOTFOUND, KB_EPARSE (corrupt or truncated value, its
 * dictionary missing or of another id: the message names the key), KB_ECONN, KB_ENOMEM. */
int kb_catalog_get_candidate(struct kb_queue *q, const char *id, struct kb_candidate *c,
                             struct kb_error *err);

/* Creates `path` and its missing parents with mode 0755 (like mkdir -p). */
int kb_mkdirs(const char *path, struct kb_error *err);
/* Writes `len` bytes of `data` (borrowed) to `path` atomically (temp file in the same folder,
 * then rename). Errors: KB_EWRITE (a write fault: kb_write_errno_code, kb/fs.h) or KB_EIO naming
 * the file and the errno, KB_EINVAL (path too long). */
int kb_write_file_atomic(const char *path, const void *data, size_t len, struct kb_error *err);
/* kb_write_file_atomic() made durable: the temp file is fsync'd before the rename and the folder
 * after it, so a failure that shows only at the fsync (thin-provisioned or network storage) is
 * an error, and a crash after it returns leaves the new content. Same errors. */
int kb_write_file_durable(const char *path, const void *data, size_t len, struct kb_error *err);

#endif
