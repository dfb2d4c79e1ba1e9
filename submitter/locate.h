/* Finding a campaign's results folder (results/<cid>/: summary.json and <task>.h5 files) and
 * the Redis of a local campaign from what the user typed, for `kb-submit report`, `export`,
 * `status` and `watch`. */
#ifndef KB_SUBMITTER_LOCATE_H
#define KB_SUBMITTER_LOCATE_H

#include <stddef.h>

struct kb_error;

/* Writes the folder into `out` (`size` bytes). In order: `results` when not NULL (--results);
 * `arg` when it is a folder; the campaign's results_dir/<id> when `arg` is a campaign.json;
 * else `arg` is a campaign id: results_dir/<id> as the campaign's Redis meta records it (at
 * `redis_addr`, NULL = $KB_REDIS; tried briefly), else ./results/<id>.
 * Errors: KB_EPARSE/KB_EIO (a bad campaign file), KB_EINVAL (path too long). */
int kb__locate_results(const char *arg, const char *results, const char *redis_addr, char *out,
                      size_t size, struct kb_error *err);

/* The Redis address `kb-launch --local` wrote for the campaign `arg` names (a campaign.json, or
 * an id: ./results/<id>): the KB_REDIS=<addr> line of <results folder>/redis.env
 * (KB_REDIS_ADDR_FILE, kb/redis.h), into `out` (`size` bytes). Returns 1 when found, else 0
 * (no such file, or a line not of that form). */
int kb__locate_redis(const char *arg, char *out, size_t size);

#endif
