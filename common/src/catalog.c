/* Tasks and candidates in Redis (see kb/catalog.h). */
#include "kb/catalog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cand_codec_private.h"
#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/error.h"
#include "kb/fs.h"
#include "kb/keys.h"

#define MAX_CANDIDATE_JSON (16u << 20) /* bytes; a sane upper bound for one source */

int kb_mkdirs(const char *path, struct kb_error *err) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
    return kb_error_set(err, KB_EINVAL, "path too long: \"%.60s...\"", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
      return kb_error_set(err, KB_EIO, "cannot create \"%s\": %s", tmp, strerror(errno));
    *p = '/';
  }
  if (mkdir(tmp, 0755) != 0 && errno != EEXIST) {
    int e = errno;
    return kb_error_set(err, kb_write_errno_code(e), "cannot create \"%s\": %s (errno %d)", tmp,
                        strerror(e), e);
  }
  return KB_OK;
}

/* kb_write_file_atomic(), and with `durable` kb_write_file_durable(). Messages name the file
 * and end with the errno. */
static int write_file(const char *path, const void *data, size_t len, int durable,
                      struct kb_error *err) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
    return kb_error_set(err, KB_EINVAL, "path too long: \"%.60s...\"", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    int e = errno;
    return kb_error_set(err, kb_write_errno_code(e), "cannot create \"%s\": %s (errno %d)", tmp,
                        strerror(e), e);
  }
  if (kb_write_all(fd, data, len) != 0 || (durable && fsync(fd) != 0)) {
    int e = errno;
    close(fd);
    unlink(tmp);
    return kb_error_set(err, kb_write_errno_code(e), "cannot write \"%s\": %s (errno %d)", tmp,
                        strerror(e), e);
  }
  if (close(fd) != 0 || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return kb_error_set(err, kb_write_errno_code(e), "cannot write \"%s\": %s (errno %d)", path,
                        strerror(e), e);
  }
  if (!durable)
    return KB_OK;
  char dir[4096];
  const char *slash = strrchr(path, '/');
  snprintf(dir, sizeof dir, "%.*s", slash != NULL ? (int)(slash - path) : 1,
           slash != NULL ? path : ".");
  int dfd = open(dir[0] != '\0' ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || fsync(dfd) != 0) {
    int e = errno;
    if (dfd >= 0)
      close(dfd);
    return kb_error_set(err, kb_write_errno_code(e),
                        "cannot write \"%s\": cannot sync its folder: %s (errno %d)", path,
                        strerror(e), e);
  }
  close(dfd);
  return KB_OK;
}

int kb_write_file_atomic(const char *path, const void *data, size_t len, struct kb_error *err) {
  return write_file(path, data, len, 0, err);
}

int kb_write_file_durable(const char *path, const void *data, size_t len, struct kb_error *err) {
  return write_file(path, data, len, 1, err);
}

static int read_text(const char *path, char **out, struct kb_error *err) {
  struct kb_buf b;
  kb_buf_init(&b);
  int rc = kb_buf_read_file(&b, path, err);
  if (rc) {
    kb_buf_release(&b);
    return rc;
  }
  *out = kb_buf_detach(&b);
  return *out ? KB_OK : kb_error_set(err, KB_ENOMEM, "out of memory");
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

int kb_catalog_put_task(struct kb_queue *q, const struct kb_task *task, struct kb_error *err) {
  char key[200];
  char suffix[100];
  snprintf(suffix, sizeof suffix, KB_KEY_TASK_FMT, task->id);
  if (kb_queue_key(q, key, sizeof key, suffix))
    return kb_error_set(err, KB_EINVAL, "task id too long");
  char *oracle = NULL, *reference = NULL, *torch_ref = NULL;
  int rc = read_text(task->oracle_path, &oracle, err);
  if (rc == KB_OK)
    rc = read_text(task->reference_path, &reference, err);
  if (rc == KB_OK && task->torch_ref_path != NULL)
    rc = read_text(task->torch_ref_path, &torch_ref, err);
  if (rc == KB_OK) {
    const char *argv[] = {"HSET", key, "spec", task->spec_json, "oracle", oracle,
                          "reference", reference, "oracle_name", base_name(task->oracle_path),
                          "torch_reference", torch_ref};
    redisReply *rep = NULL;
    rc = kb_redis_command(q->redis, torch_ref != NULL ? 12 : 10, argv, NULL, 0, &rep, err);
    if (rep)
      freeReplyObject(rep);
  }
  kb_free(oracle);
  kb_free(reference);
  kb_free(torch_ref);
  return rc;
}

/* The torch_reference text `text` (NULL: none stored) of `task`, parsed in `dir`: written there
 * under the file name the spec gives it, task->torch_ref_path pointing at it; without a text
 * the path is dropped. The name must differ from the oracle's `oracle_name`. */
static int put_torch_ref(struct kb_task *task, const char *dir, const char *oracle_name,
                         const char *text, struct kb_error *err) {
  if (text == NULL || task->torch_ref_path == NULL) {
    kb_free(task->torch_ref_path);
    task->torch_ref_path = NULL;
    return KB_OK;
  }
  const char *name = base_name(task->torch_ref_path);
  if (strcmp(name, oracle_name) == 0)
    return kb_error_set(err, KB_EPARSE, "task \"%s\": torch_reference and oracle share the file "
                        "name \"%s\"", task->id, name);
  struct kb_buf path;
  kb_buf_init(&path);
  int rc = kb_buf_addf(&path, "%s/%s", dir, name);
  if (rc == KB_OK)
    rc = kb_write_file_atomic(path.data, text, strlen(text), err);
  if (rc == KB_OK) {
    kb_free(task->torch_ref_path);
    task->torch_ref_path = kb_buf_detach(&path);
    if (task->torch_ref_path == NULL)
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  kb_buf_release(&path);
  return rc;
}

/* HMGET of string fields of `key`; each value copied into out[i] (new) or NULL when absent. */
static int hmget(struct kb_queue *q, const char *key, int n, const char **fields, char **out,
                 size_t *lens, struct kb_error *err) {
  const char *argv[8];
  argv[0] = "HMGET";
  argv[1] = key;
  for (int i = 0; i < n; i++)
    argv[2 + i] = fields[i];
  redisReply *rep = NULL;
  int rc = kb_redis_command(q->redis, 2 + n, argv, NULL, 0, &rep, err);
  if (rc)
    return rc;
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements != (size_t)n) {
    freeReplyObject(rep);
    return kb_error_set(err, KB_EREDIS, "HMGET %s: unexpected reply", key);
  }
  for (int i = 0; i < n; i++) {
    out[i] = NULL;
    if (rep->element[i]->type != REDIS_REPLY_STRING)
      continue;
    out[i] = kb_malloc(rep->element[i]->len + 1);
    if (out[i] == NULL) {
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
      continue;
    }
    memcpy(out[i], rep->element[i]->str, rep->element[i]->len);
    out[i][rep->element[i]->len] = '\0';
    if (lens)
      lens[i] = rep->element[i]->len;
  }
  freeReplyObject(rep);
  return rc;
}

int kb_catalog_get_task(struct kb_queue *q, const char *task_id, const char *work_dir,
                        struct kb_task *task, struct kb_error *err) {
  char key[200], suffix[100];
  snprintf(suffix, sizeof suffix, KB_KEY_TASK_FMT, task_id);
  if (kb_queue_key(q, key, sizeof key, suffix))
    return kb_error_set(err, KB_EINVAL, "task id too long");
  const char *fields[] = {"spec", "oracle", "oracle_name", "torch_reference"};
  char *v[4] = {NULL, NULL, NULL, NULL};
  struct kb_buf dir, path;
  kb_buf_init(&dir);
  kb_buf_init(&path);
  int rc = hmget(q, key, 4, fields, v, NULL, err);
  if (rc == KB_OK && (v[0] == NULL || v[1] == NULL || v[2] == NULL))
    rc = kb_error_set(err, KB_ENOTFOUND, "task \"%s\" of campaign \"%s\" is not in redis",
                      task_id, q->cid);
  if (rc == KB_OK && (strchr(v[2], '/') || strcmp(v[2], "..") == 0 || v[2][0] == '\0'))
    rc = kb_error_set(err, KB_EPARSE, "%s: bad oracle_name", key);
  if (rc == KB_OK)
    rc = kb_buf_addf(&dir, "%s/%s/%s", work_dir, q->cid, task_id);
  if (rc == KB_OK)
    rc = kb_mkdirs(dir.data, err);
  if (rc == KB_OK)
    rc = kb_buf_addf(&path, "%s/%s", dir.data, v[2]);
  if (rc == KB_OK)
    rc = kb_write_file_atomic(path.data, v[1], strlen(v[1]), err);
  if (rc == KB_OK)
    rc = kb_task_parse(key, v[0], dir.data, 0, task, err);
  if (rc == KB_OK) {
    char *p = kb_strdup(path.data);
    if (p == NULL) {
      kb_task_release(task);
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
    } else {
      kb_free(task->oracle_path);
      task->oracle_path = p;
      rc = put_torch_ref(task, dir.data, v[2], v[3], err);
      if (rc)
        kb_task_release(task);
    }
  }
  if (rc == KB_ENOMEM)
    kb_error_set(err, rc, "out of memory");
  for (int i = 0; i < 4; i++)
    kb_free(v[i]);
  kb_buf_release(&dir);
  kb_buf_release(&path);
  return rc;
}

int kb_catalog_get_reference(struct kb_queue *q, const char *task_id, char **out,
                             struct kb_error *err) {
  char key[200], suffix[100];
  snprintf(suffix, sizeof suffix, KB_KEY_TASK_FMT, task_id);
  if (kb_queue_key(q, key, sizeof key, suffix))
    return kb_error_set(err, KB_EINVAL, "task id too long");
  const char *fields[] = {"reference"};
  int rc = hmget(q, key, 1, fields, out, NULL, err);
  if (rc == KB_OK && *out == NULL)
    rc = kb_error_set(err, KB_ENOTFOUND, "task \"%s\" has no reference in redis", task_id);
  return rc;
}

int kb_catalog_put_candidate(struct kb_queue *q, const struct kb_candidate *c,
                             struct kb_error *err) {
  char key[200], suffix[100];
  snprintf(suffix, sizeof suffix, KB_KEY_CAND_FMT, c->id);
  if (kb_queue_key(q, key, sizeof key, suffix))
    return kb_error_set(err, KB_EINVAL, "candidate key too long");
  char *json = NULL;
  void *z = NULL;
  size_t zlen = 0;
  int rc = kb_candidate_to_json(c, &json, err);
  if (rc == KB_OK)
    rc = kb__cand_encode(q, c->task, json, strlen(json), &z, &zlen, err);
  if (rc == KB_OK) {
    const char *argv[] = {"HSET", key, "task", c->task, "name", c->name, "json", z};
    size_t lens[] = {4, strlen(key), 4, strlen(c->task), 4, strlen(c->name), 4, zlen};
    redisReply *rep = NULL;
    rc = kb_redis_command(q->redis, 8, argv, lens, 0, &rep, err);
    if (rep)
      freeReplyObject(rep);
  }
  kb_free(json);
  kb_free(z);
  return rc;
}

int kb_catalog_get_candidate(struct kb_queue *q, const char *id, struct kb_candidate *c,
                             struct kb_error *err) {
  char key[200], suffix[100];
  snprintf(suffix, sizeof suffix, KB_KEY_CAND_FMT, id);
  if (kb_queue_key(q, key, sizeof key, suffix))
    return kb_error_set(err, KB_EINVAL, "candidate key too long");
  const char *fields[] = {"task", "json"};
  char *v[2] = {NULL, NULL};
  size_t lens[2] = {0, 0};
  int rc = hmget(q, key, 2, fields, v, lens, err);
  if (rc == KB_OK && v[1] == NULL)
    rc = kb_error_set(err, KB_ENOTFOUND, "candidate %s is not in redis", id);
  char *json = NULL;
  size_t jlen = 0;
  struct kb_error derr = {0};
  if (rc == KB_OK && kb__cand_decode(q, v[0] ? v[0] : "", v[1], lens[1], MAX_CANDIDATE_JSON,
                                     &json, &jlen, &derr) != KB_OK)
    rc = kb_error_set(err, derr.code, "%s: json: %s", key, derr.msg);
  if (rc == KB_OK)
    rc = kb_candidate_from_json(json, key, c, err);
  if (rc == KB_OK && strcmp(c->id, id) != 0) {
    rc = kb_error_set(err, KB_EPARSE, "%s: holds candidate %s", key, c->id);
    kb_candidate_release(c);
  }
  for (int i = 0; i < 2; i++)
    kb_free(v[i]);
  kb_free(json);
  return rc;
}
