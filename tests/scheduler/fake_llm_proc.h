/* Test fixture: tests/fixtures/fake_llm.py as a child process on a free port, with a temp
 * folder for its port file and request log. Tests start their own and stop it. */
#ifndef KB_TEST_FAKE_LLM_PROC_H
#define KB_TEST_FAKE_LLM_PROC_H

#include <stdint.h>
#include <sys/types.h>

struct kbt_fake {
  char dir[64];        /* mkdtemp folder: port file, log */
  char log[128];       /* JSONL log of requests */
  int port;
  pid_t pid;           /* 0 when stopped */
  char openai[128];    /* http://127.0.0.1:PORT/v1/chat/completions */
  char anthropic[128]; /* http://127.0.0.1:PORT/v1/messages */
};

/* Starts `python` (borrowed) running `script` (borrowed) with extra arguments `argv` (NULL-
 * terminated, borrowed; may be NULL) and waits until it listens. Returns 0 or -1 (message on
 * stderr). */
int kbt_fake_start(struct kbt_fake *f, const char *python, const char *script,
                   const char *const *argv);
/* Replaces the fake's behaviour queue ("429,ok"). Returns 0 or -1. */
int kbt_fake_script(struct kbt_fake *f, const char *behaviours);
/* Sums the logged requests whose status was `status` (0: any): their count and the prompt +
 * completion tokens their replies reported. Returns 0 or -1. */
int kbt_fake_totals(struct kbt_fake *f, int status, long *requests, int64_t *tokens);
/* The tokens a provider bills for every logged request (the log's "billed": also answers whose
 * usage the reply hid or garbled), or -1 when the log cannot be read. */
int64_t kbt_fake_billed(struct kbt_fake *f);
/* Stops it (SIGTERM, then SIGKILL) and removes its folder. */
void kbt_fake_stop(struct kbt_fake *f);

#endif
