/* The compile tier of KernelBench-format candidates (see kb__compile_kernelbench in compile.h
 * and docs/sandbox.md "KernelBench-format candidates").
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compile.h"
#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/error.h"
#include "kb/fs.h"
#include "kb/hash.h"
#include "kb/log.h"
#include "proc.h"
#include "sandbox_client.h"
#include "spawn_tool.h"

/* load_inline runs c++ (or nvcc) on torch's headers: slower than a plain candidate build */
#define KB_BUILD_TIMEOUT_S 600.0
#define KB_OUTPUT_KEEP (64 * 1024)
#define N_EXTRA_ENV 6

/* Appends `s` and its NUL to the digest; 1 on failure. */
static int hash_str(struct kb_sha256 *h, const char *s) {
  return kb_sha256_update(h, s ? s : "", strlen(s ? s : "") + 1) != KB_OK;
}

/* The cache key of `req` into `out`; `oracle_text` and `script_text` are the files' texts. */
static int kb_key(const struct kb__compiler *cc, const struct kb__compile_req *req,
                  const char *oracle_text, const char *script_text, char out[KB_CAND_ID_LEN + 1],
                  struct kb_error *err) {
  struct kb_sha256 *h = kb_sha256_new();
  if (h == NULL)
    return kb_error_set(err, KB_ENOMEM, "cannot hash the build: out of memory");
  char *norm = kb_source_normalize(req->source ? req->source : "");
  int bad = norm == NULL;
  bad = bad || hash_str(h, "kernelbench") || hash_str(h, norm) || hash_str(h, oracle_text) ||
        hash_str(h, cc->lang == KB__LANG_CUDA ? "cuda" : "host") ||
        hash_str(h, req->arch ? req->arch : cc->arch) || hash_str(h, cc->version) ||
        hash_str(h, kb__sandbox_python()) || hash_str(h, script_text);
  kb_free(norm);
  if (bad || kb_sha256_final_hex(h, out) != KB_OK) {
    if (bad)
      kb_sha256_free(h);
    return kb_error_set(err, KB_EINTERNAL, "cannot hash the build");
  }
  return KB_OK;
}

/* Reads `dir`/build.json into `b`: ok with the label, or the reason of a refusal. Returns
 * KB_OK when the file holds a verdict; KB_EPARSE when it is missing or malformed. */
static int read_manifest(const char *dir, struct kb__build *b) {
  char path[4096];
  snprintf(path, sizeof path, "%s/build.json", dir);
  json_t *m = json_load_file(path, 0, NULL);
  const char *status = json_string_value(json_object_get(m, "status"));
  const char *reason = json_string_value(json_object_get(m, "reason"));
  const char *label = json_string_value(json_object_get(m, "label"));
  int rc = KB_OK;
  if (status == NULL) {
    rc = KB_EPARSE;
  } else if (strcmp(status, "ok") == 0) {
    b->ok = 1;
    snprintf(b->label, sizeof b->label, "%s", label ? label : "");
  } else {
    b->rejected = strcmp(status, "rejected") == 0;
    b->infra = strcmp(status, "infra_error") == 0;
    snprintf(b->reason, sizeof b->reason, "%s%s",
             b->rejected || b->infra ? "" : "does not compile: ", reason ? reason : status);
  }
  json_decref(m);
  return rc;
}

/* A cached failure: <key>.kb.err, "rejected" or "compile_error" on its first line, then the
 * reason, then the log. Returns 1 when one was read into `b`. */
static int read_failure(const char *path, struct kb__build *b) {
  struct kb_buf text;
  kb_buf_init(&text);
  if (kb_buf_read_file(&text, path, NULL) != KB_OK || text.len == 0) {
    kb_buf_release(&text);
    return 0;
  }
  char *nl1 = strchr(text.data, '\n');
  char *nl2 = nl1 ? strchr(nl1 + 1, '\n') : NULL;
  if (nl1 == NULL || nl2 == NULL) {
    kb_buf_release(&text);
    return 0;
  }
  *nl1 = *nl2 = '\0';
  b->rejected = strcmp(text.data, "rejected") == 0;
  snprintf(b->reason, sizeof b->reason, "%s", nl1 + 1);
  b->log = nl2[1] ? kb_strdup(nl2 + 1) : NULL;
  b->cached = 1;
  kb_buf_release(&text);
  return 1;
}

static void write_failure(const char *path, const struct kb__build *b) {
  char tmp[4300];
  snprintf(tmp, sizeof tmp, "%s.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (f == NULL)
    return;
  fprintf(f, "%s\n%s\n%s", b->rejected ? "rejected" : "compile_error", b->reason,
          b->log ? b->log : "");
  if (fclose(f) != 0 || rename(tmp, path) != 0)
    unlink(tmp);
}

/* The log: the tail of the builder's output. New text or NULL. */
static char *output_tail(const struct kb__proc_result *res) {
  if (res->output.len == 0)
    return NULL;
  size_t len = res->output.len;
  const char *text = res->output.data;
  if (len > KB__COMPILE_LOG_MAX) {
    text += len - KB__COMPILE_LOG_MAX;
    len = KB__COMPILE_LOG_MAX;
  }
  return kb_strndup(text, len);
}

/* Runs the builder in `tmp` on `src` (written there), Triton's and inductor's caches in `jit`;
 * fills `b` from its verdict. */
static int run_builder(const struct kb__compiler *cc, const struct kb__compile_req *req,
                       const char *script, const char *tmp, const char *jit,
                       const atomic_int *cancel, struct kb__build *b, struct kb_error *err) {
  char src[4200], sub[4400];
  snprintf(src, sizeof src, "%s/source.py", tmp);
  struct kb_buf env;
  kb_buf_init(&env);
  int rc = KB_OK;
  FILE *f = req->reference ? NULL : fopen(src, "w");
  if (!req->reference &&
      (f == NULL || fputs(req->source ? req->source : "", f) < 0 || fclose(f) != 0)) {
    if (f != NULL)
      fclose(f);
    return kb_error_set(err, kb_write_errno_code(errno), "%s: cannot write: %s (errno %d)", src,
                        strerror(errno), errno);
  }
  static const char *const dirs[] = {"tmp", "ext", "triton", "inductor"};
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
    snprintf(sub, sizeof sub, "%s/%s", i < 2 ? tmp : jit, dirs[i]);
    /* `jit` and its folders may be there already: another runner's build of this key */
    int made = i < 2 ? mkdir(sub, 0755)
                     : ((mkdir(jit, 0755) == 0 || errno == EEXIST) &&
                        (mkdir(sub, 0755) == 0 || errno == EEXIST)) ? 0 : -1;
    if (made != 0)
      return kb_error_set(err, kb_write_errno_code(errno), "%s: cannot create: %s (errno %d)",
                          sub, strerror(errno), errno);
  }
  int n_env = 0;
  while (cc->envp[n_env] != NULL)
    n_env++;
  char **envp = kb_calloc((size_t)n_env + N_EXTRA_ENV + 1, sizeof *envp);
  char *extra[N_EXTRA_ENV] = {0};
  /* the extension builds inside the build folder; the JIT caches in `jit`, a folder of the
   * cache that keeps its path: inductor writes absolute paths of its cache into what it
   * caches (measured on the H200: with the caches in the build folder, renamed into place
   * afterwards, the confined worker tried to create the vanished tmpkb.* folder and every
   * torch.compile candidate with a Triton kernel crashed with PermissionError) */
  static const char *const names[N_EXTRA_ENV] = {"TMPDIR=", "TORCH_EXTENSIONS_DIR=",
                                                 "TRITON_CACHE_DIR=", "TORCHINDUCTOR_CACHE_DIR=",
                                                 "MAX_JOBS=2", "PYTHONDONTWRITEBYTECODE=1"};
  static const char *const under[N_EXTRA_ENV] = {"/tmp", "/ext", "/triton", "/inductor", NULL,
                                                 NULL};
  for (int i = 0; envp != NULL && i < N_EXTRA_ENV; i++) {
    kb_buf_reset(&env);
    int bad = kb_buf_addf(&env, "%s", names[i]) != KB_OK ||
              (under[i] != NULL &&
               kb_buf_addf(&env, "%s%s", i < 2 ? tmp : jit, under[i]) != KB_OK);
    if (bad || (extra[i] = kb_buf_detach(&env)) == NULL)
      rc = KB_ENOMEM;
  }
  if (envp == NULL || rc) {
    rc = kb_error_set(err, KB_ENOMEM, "cannot compile: out of memory");
    goto out;
  }
  for (int i = 0; i < n_env; i++)
    envp[i] = cc->envp[i];
  for (int i = 0; i < N_EXTRA_ENV; i++)
    envp[n_env + i] = extra[i];
  char *backend = cc->lang == KB__LANG_CUDA ? "cuda" : "host";
  char *candidate[] = {(char *)kb__sandbox_python(), "-I", "-B", (char *)script, "--source", src,
                       "--oracle", (char *)req->oracle, "--out", (char *)tmp, "--backend",
                       backend, NULL};
  char *reference[] = {(char *)kb__sandbox_python(), "-I", "-B", (char *)script, "--reference",
                       "--oracle", (char *)req->oracle, "--out", (char *)tmp, "--backend",
                       backend, NULL};
  char **argv = req->reference ? reference : candidate;
  struct kb__proc_result res;
  kb__proc_result_init(&res);
  double timeout = req->timeout_s > 0 ? req->timeout_s : KB_BUILD_TIMEOUT_S;
  rc = kb__spawn_run(argv, envp, tmp, timeout, KB_OUTPUT_KEEP, cancel, &res, err);
  if (rc == KB_OK) {
    b->seconds = res.wall_s;
    b->log = output_tail(&res);
    if (res.timed_out)
      snprintf(b->reason, sizeof b->reason, "does not compile: the build timed out after %g s",
               timeout);
    else if (!res.exited || res.exit_code != 0 || read_manifest(tmp, b) != KB_OK)
      snprintf(b->reason, sizeof b->reason, "does not compile: the ModelNew builder %s %d "
               "(see the log)", res.exited ? "exited with status" : "died of signal",
               res.exited ? res.exit_code : res.signal);
  }
  kb__proc_result_release(&res);
out:
  for (int i = 0; i < N_EXTRA_ENV; i++)
    kb_free(extra[i]);
  kb_free(envp);
  kb_buf_release(&env);
  return rc;
}

/* The builder's inputs: its script's path into `*script` (new; the caller frees it, also on an
 * error), the text of the task's module `module_path` into `module` and the script's text into
 * `script_text` (both initialised by the caller). Errors: KB_ENOMEM, the read's (KB_EIO,
 * KB_ENOTFOUND), KB_ENOTFOUND for an unreadable script. */
static int builder_inputs(const char *module_path, struct kb_buf *module,
                          struct kb_buf *script_text, char **script, struct kb_error *err) {
  *script = kb__sandbox_builder_script();
  if (*script == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  int rc = kb_buf_read_file(module, module_path, err);
  if (rc == KB_OK && kb_buf_read_file(script_text, *script, NULL) != KB_OK)
    rc = kb_error_set(err, KB_ENOTFOUND, "the ModelNew builder \"%s\" is not readable (set "
                      "KB_SANDBOX_DIR to its folder)", *script);
  return rc;
}

/* Kept whole (82 lines): the cache lookup, the build and the move into place share the paths
 * and the one clean-up. */
int kb__compile_kernelbench(const struct kb__compiler *cc, const struct kb__compile_req *req,
                            const atomic_int *cancel, struct kb__build *b,
                            struct kb_error *err) {
  kb__build_release(b);
  b->format = KB_FORMAT_KERNELBENCH;
  if (req->oracle == NULL) { /* a verdict, not a runner error: nothing is built */
    snprintf(b->reason, sizeof b->reason, "a KernelBench-format candidate (class ModelNew) "
             "runs only on a task with a pytorch oracle");
    return KB_OK;
  }
  struct kb_buf oracle, script_text;
  kb_buf_init(&oracle);
  kb_buf_init(&script_text);
  char *script = NULL;
  char entry[4096], failed[4200], tmp[4096];
  tmp[0] = '\0';
  int rc = builder_inputs(req->oracle, &oracle, &script_text, &script, err);
  if (rc == KB_OK)
    rc = kb_key(cc, req, oracle.data, script_text.data, b->key, err);
  if (rc)
    goto out;
  snprintf(entry, sizeof entry, "%s/%s.kb", cc->cache_dir, b->key);
  snprintf(failed, sizeof failed, "%s.err", entry);
  struct kb__build found;
  kb__build_init(&found);
  if (read_manifest(entry, &found) == KB_OK && found.ok) {
    b->ok = b->cached = 1;
    snprintf(b->label, sizeof b->label, "%s", found.label);
    b->lib_path = kb_strdup(entry);
    if (b->lib_path == NULL)
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
    goto out;
  }
  if (read_failure(failed, b))
    goto out;
  snprintf(tmp, sizeof tmp, "%s/tmpkb.XXXXXX", cc->cache_dir);
  if (mkdtemp(tmp) == NULL) {
    rc = kb_error_set(err, kb_write_errno_code(errno), "%s: cannot create a build folder: %s "
                      "(errno %d)", cc->cache_dir, strerror(errno), errno);
    tmp[0] = '\0';
    goto out;
  }
  char jit[4200];
  snprintf(jit, sizeof jit, "%s/%s.jit", cc->cache_dir, b->key);
  rc = run_builder(cc, req, script, tmp, jit, cancel, b, err);
  /* a build without torch.compile or Triton leaves them empty: not kept (rmdir fails on a
   * folder that holds something, which is then kept) */
  char sub[4400];
  snprintf(sub, sizeof sub, "%s/triton", jit);
  rmdir(sub);
  snprintf(sub, sizeof sub, "%s/inductor", jit);
  rmdir(sub);
  rmdir(jit);
  if (rc)
    goto out;
  if (b->ok) {
    /* an atomic move; a runner that built the same key first wins, ours is dropped */
    if (rename(tmp, entry) == 0)
      tmp[0] = '\0';
    else if (errno != EEXIST && errno != ENOTEMPTY) {
      rc = kb_error_set(err, kb_write_errno_code(errno), "%s: cannot store: %s (errno %d)", entry,
                        strerror(errno), errno);
      goto out;
    }
    b->lib_path = kb_strdup(entry);
    if (b->lib_path == NULL)
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  } else if (!b->infra && strstr(b->reason, "timed out") == NULL &&
             strstr(b->reason, "builder") == NULL) {
    /* a plain verdict is deterministic enough to remember, unless the cache was starved of
     * disk (kb__cache_check: then it is the machine's failure, and the runner leaves) */
    kb_remove_tree(tmp, NULL);
    tmp[0] = '\0';
    rc = kb__cache_check(cc->cache_dir, err);
    if (rc == KB_OK)
      write_failure(failed, b);
  }
out:
  if (tmp[0] != '\0')
    kb_remove_tree(tmp, NULL);
  kb_free(script);
  kb_buf_release(&oracle);
  kb_buf_release(&script_text);
  if (rc)
    kb__build_release(b);
  else
    b->format = KB_FORMAT_KERNELBENCH;
  return rc;
}

int kb__reference_jit_dir(const struct kb__compiler *cc, char *out, size_t size) {
  if (cc->cache_dir == NULL)
    return KB_EINVAL;
  int n = snprintf(out, size, "%s/reference.jit", cc->cache_dir);
  return n > 0 && (size_t)n < size ? KB_OK : KB_EINVAL;
}

/* Kept whole (55 lines): the marker's lookup, the run and the marker share the paths and the
 * one clean-up. */
int kb__compile_reference(const struct kb__compiler *cc, const struct kb__compile_req *req,
                          const atomic_int *cancel, struct kb__build *b, struct kb_error *err) {
  kb__build_release(b);
  snprintf(b->label, sizeof b->label, "reference");
  if (req->oracle == NULL)
    return kb_error_set(err, KB_EINVAL, "a reference build needs the task's module");
  struct kb_buf module, script_text;
  kb_buf_init(&module);
  kb_buf_init(&script_text);
  char *script = NULL;
  char marker[4096], tmp[4096], jit[4096];
  tmp[0] = '\0';
  int rc = builder_inputs(req->oracle, &module, &script_text, &script, err);
  if (rc == KB_OK && kb__reference_jit_dir(cc, jit, sizeof jit) != KB_OK)
    rc = kb_error_set(err, KB_EINVAL, "no cache folder for the reference's caches");
  /* the key of a ModelNew build whose source is the word "reference" and whose oracle is the
   * module; its marker's suffix (.ref, not .kb) keeps the two apart */
  struct kb__compile_req keyed = {.source = "reference", .arch = req->arch};
  if (rc == KB_OK)
    rc = kb_key(cc, &keyed, module.data, script_text.data, b->key, err);
  if (rc)
    goto out;
  snprintf(marker, sizeof marker, "%s/%s.ref", cc->cache_dir, b->key);
  if (access(marker, F_OK) == 0) { /* compiled ahead before, by this runner or another */
    b->ok = b->cached = 1;
    goto out;
  }
  snprintf(tmp, sizeof tmp, "%s/tmpref.XXXXXX", cc->cache_dir);
  if (mkdtemp(tmp) == NULL) {
    rc = kb_error_set(err, kb_write_errno_code(errno), "%s: cannot create a build folder: %s "
                      "(errno %d)", cc->cache_dir, strerror(errno), errno);
    tmp[0] = '\0';
    goto out;
  }
  rc = run_builder(cc, req, script, tmp, jit, cancel, b, err);
  if (rc == KB_OK && b->ok) {
    /* the builder's own word: compiled ("warmed"), or why not (kept for the log line) */
    char path[4200];
    snprintf(path, sizeof path, "%s/build.json", tmp);
    json_t *m = json_load_file(path, 0, NULL);
    const char *why = json_string_value(json_object_get(m, "reason"));
    if (json_is_false(json_object_get(m, "warmed")))
      snprintf(b->reason, sizeof b->reason, "%s", why ? why : "not compiled");
    else if (rename(path, marker) != 0) /* compiled: recorded for every later runner */
      kb_warn("cannot record \"%s\": %s", marker, strerror(errno));
    json_decref(m);
  }
out:
  if (tmp[0] != '\0')
    kb_remove_tree(tmp, NULL);
  kb_free(script);
  kb_buf_release(&module);
  kb_buf_release(&script_text);
  return rc;
}
