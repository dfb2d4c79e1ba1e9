/* The fake LLM server as a test fixture (see fake_llm_proc.h). */
#include "fake_llm_proc.h"

#include <curl/curl.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int kbt_fake_start(struct kbt_fake *f, const char *python, const char *script,
                   const char *const *argv) {
  memset(f, 0, sizeof *f);
  snprintf(f->dir, sizeof f->dir, "/tmp/kb-fake-llm-XXXXXX");
  if (mkdtemp(f->dir) == NULL) {
    perror("mkdtemp");
    return -1;
  }
  char port_file[128];
  snprintf(port_file, sizeof port_file, "%s/port", f->dir);
  snprintf(f->log, sizeof f->log, "%s/requests.jsonl", f->dir);
  const char *args[32] = {python, script, "--port-file", port_file, "--log", f->log};
  int n = 6;
  for (int i = 0; argv && argv[i] && n < 31; i++)
    args[n++] = argv[i];
  args[n] = NULL;
  if (posix_spawn(&f->pid, python, NULL, NULL, (char *const *)args, environ) != 0) {
    perror("posix_spawn fake_llm.py");
    f->pid = 0;
    return -1;
  }
  for (int i = 0; i < 200; i++) { /* 10 s: python starts slowly on a loaded machine */
    FILE *p = fopen(port_file, "r");
    if (p) {
      int ok = fscanf(p, "%d", &f->port) == 1;
      fclose(p);
      if (ok) {
        snprintf(f->openai, sizeof f->openai, "http://127.0.0.1:%d/v1/chat/completions",
                 f->port);
        snprintf(f->anthropic, sizeof f->anthropic, "http://127.0.0.1:%d/v1/messages",
                 f->port);
        return 0;
      }
    }
    int status;
    if (waitpid(f->pid, &status, WNOHANG) == f->pid) {
      fprintf(stderr, "fake_llm.py exited early (status %d)\n", status);
      f->pid = 0;
      return -1;
    }
    nap_ms(50);
  }
  fprintf(stderr, "fake_llm.py did not write its port\n");
  return -1;
}

static size_t discard(char *d, size_t s, size_t n, void *a) {
  (void)d;
  (void)a;
  return s * n;
}

int kbt_fake_script(struct kbt_fake *f, const char *behaviours) {
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/_control/script", f->port);
  CURL *e = curl_easy_init();
  if (e == NULL)
    return -1;
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, behaviours);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(e, CURLOPT_TIMEOUT, 10L);
  CURLcode rc = curl_easy_perform(e);
  curl_easy_cleanup(e);
  return rc == CURLE_OK ? 0 : -1;
}

int kbt_fake_totals(struct kbt_fake *f, int status, long *requests, int64_t *tokens) {
  *requests = 0;
  *tokens = 0;
  FILE *in = fopen(f->log, "r");
  if (in == NULL)
    return 0; /* no request yet */
  char line[1 << 16];
  int rc = 0;
  while (fgets(line, sizeof line, in)) {
    json_t *o = json_loads(line, 0, NULL);
    if (o == NULL) {
      rc = -1;
      continue;
    }
    if (status == 0 || json_integer_value(json_object_get(o, "status")) == status) {
      (*requests)++;
      *tokens += json_integer_value(json_object_get(o, "prompt_tokens")) +
                 json_integer_value(json_object_get(o, "completion_tokens"));
    }
    json_decref(o);
  }
  fclose(in);
  return rc;
}

int64_t kbt_fake_billed(struct kbt_fake *f) {
  FILE *in = fopen(f->log, "r");
  if (in == NULL)
    return 0; /* no request yet */
  char line[1 << 16];
  int64_t billed = 0;
  while (billed >= 0 && fgets(line, sizeof line, in)) {
    json_t *o = json_loads(line, 0, NULL);
    json_t *v = json_object_get(o, "billed");
    billed = json_is_integer(v) ? billed + json_integer_value(v) : -1;
    json_decref(o);
  }
  fclose(in);
  return billed;
}

void kbt_fake_stop(struct kbt_fake *f) {
  if (f->pid > 0) {
    kill(f->pid, SIGTERM);
    int status;
    for (int i = 0; i < 40 && waitpid(f->pid, &status, WNOHANG) == 0; i++)
      nap_ms(50);
    if (waitpid(f->pid, &status, WNOHANG) == 0) {
      kill(f->pid, SIGKILL);
      waitpid(f->pid, &status, 0);
    }
    f->pid = 0;
  }
  if (f->dir[0]) {
    char path[160];
    snprintf(path, sizeof path, "%s/port", f->dir);
    unlink(path);
    unlink(f->log);
    rmdir(f->dir);
    f->dir[0] = '\0';
  }
}
