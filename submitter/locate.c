/* Finding a campaign's results folder (see locate.h). */
#include "locate.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "kb/campaign.h"
#include "kb/error.h"
#include "kb/keys.h"
#include "kb/redis.h"

static int put(char *out, size_t size, struct kb_error *err, const char *a, const char *b) {
  int n = b ? snprintf(out, size, "%s/%s", a, b) : snprintf(out, size, "%s", a);
  if (n < 0 || (size_t)n >= size)
    return kb_error_set(err, KB_EINVAL, "path \"%s\" is too long", a);
  return KB_OK;
}

/* results_dir of campaign `cid` in Redis meta, or "" (any failure: the caller falls back). */
static void from_redis(const char *cid, const char *addr, char *dir, size_t size) {
  struct kb_redis_opts ro = {.addr = addr, .connect_timeout_ms = 500, .retry_ms = 1};
  struct kb_redis *r = NULL;
  struct kb_error err = {0};
  char key[KB_ID_MAX + 16];
  dir[0] = '\0';
  if (kb_key(key, sizeof key, cid, KB_KEY_META) || kb_redis_connect(&ro, &r, &err)) {
    kb_redis_free(r);
    return;
  }
  redisReply *rep = NULL;
  if (kb_redis_commandf(r, &rep, &err, "HGET %s results_dir", key) == KB_OK &&
      rep->type == REDIS_REPLY_STRING)
    snprintf(dir, size, "%s", rep->str);
  freeReplyObject(rep);
  kb_redis_free(r);
}

int kb__locate_results(const char *arg, const char *results, const char *redis_addr, char *out,
                      size_t size, struct kb_error *err) {
  struct stat st;
  if (results)
    return put(out, size, err, results, NULL);
  if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode))
    return put(out, size, err, arg, NULL);
  size_t n = strlen(arg);
  if (n > 5 && strcmp(arg + n - 5, ".json") == 0) {
    struct kb_campaign c;
    int rc = kb_campaign_load(arg, &c, err);
    if (rc == KB_OK)
      rc = put(out, size, err, c.results_dir, c.id);
    kb_campaign_release(&c);
    return rc;
  }
  char dir[4096];
  from_redis(arg, redis_addr, dir, sizeof dir);
  return put(out, size, err, dir[0] ? dir : "results", arg);
}

int kb__locate_redis(const char *arg, char *out, size_t size) {
  char dir[4096], path[4200], line[1024];
  struct kb_error err = {0};
  size_t n = strlen(arg);
  struct stat st;
  out[0] = '\0';
  if (n > 5 && strcmp(arg + n - 5, ".json") == 0 && stat(arg, &st) == 0) {
    if (kb__locate_results(arg, NULL, NULL, dir, sizeof dir, &err))
      return 0;
  } else if (snprintf(dir, sizeof dir, "results/%s", arg) >= (int)sizeof dir) {
    return 0;
  }
  snprintf(path, sizeof path, "%s/%s", dir, KB_REDIS_ADDR_FILE);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return 0;
  int ok = fgets(line, sizeof line, f) != NULL && strncmp(line, "KB_REDIS=", 9) == 0;
  fclose(f);
  if (!ok)
    return 0;
  line[strcspn(line, "\r\n")] = '\0';
  if (line[9] == '\0' || snprintf(out, size, "%s", line + 9) >= (int)size) {
    out[0] = '\0';
    return 0;
  }
  return 1;
}
