/* Test helper: writes store files for check_h5.py and the kill test.
 *
 *   store_writer fixture PATH         the fixture file check_h5.py checks row by row; closes it
 *   store_writer loop PATH [MAX]      evaluations 0, 1, 2, ... up to MAX, starting 5 before the
 *                                     stored count (re-sending a few, as a restarted scheduler
 *                                     does), flushing every 2 and printing
 *                                     "<evaluations> <candidates>" after each flush
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "kb/error.h"
#include "store.h"

static int die(const char *what, const struct kb_error *err) {
  fprintf(stderr, "store_writer: %s: %s\n", what, err->msg);
  return 1;
}

/* Adds evaluation `i` (and its candidate when i % 3 == 0, /best when i % 3 == 2). */
static int add_one(struct kb_store *s, unsigned long i, struct kb_error *err) {
  if (i % 3 == 0) {
    struct fx_candidate fc;
    fx_candidate(&fc, i / 3);
    int rc = kb__store_add_candidate(s, &fc.c, NULL, err);
    if (rc)
      return rc;
  }
  struct kb_result r;
  char log[64];
  fx_result(&r, i, log);
  int rc = kb__store_add_evaluation(s, &r, NULL, err);
  if (rc == KB_OK && i % 3 == 2) {
    char name[32];
    snprintf(name, sizeof name, "cand-%lu", i / 3);
    rc = kb__store_set_best(s, r.candidate, name, 2, fx_median(i), 1000.0 / fx_median(i), err);
  }
  return rc;
}

static int fixture(const char *path) {
  struct kb_error err = {0, ""};
  struct kb_store_task_info info = fx_info();
  struct kb_store *s = NULL;
  if (kb__store_open(path, &info, &s, &err))
    return die("open", &err);
  for (unsigned long i = 0; i < 12; i++)
    if (add_one(s, i, &err))
      return die("add", &err);
  /* Duplicates change nothing. */
  for (unsigned long i = 0; i < 12; i++)
    if (add_one(s, i, &err))
      return die("add again", &err);
  /* Candidate 1000: knobs longer than the column, cut before a 2-byte character. */
  struct fx_candidate fc;
  fx_candidate(&fc, 1000);
  char knobs[400];
  memset(knobs, 'k', sizeof knobs);
  memcpy(knobs + 254, "\xc3\xa9", 2);
  knobs[sizeof knobs - 1] = '\0';
  fc.c.knobs = knobs;
  if (kb__store_add_candidate(s, &fc.c, NULL, &err))
    return die("add long candidate", &err);
  /* Its evaluation: a reason filling all 256 bytes with no NUL, ending in "é". */
  struct kb_result r;
  char log[64];
  fx_result(&r, 3000, log);
  r.status = KB_STATUS_CRASH;
  memset(r.reason, 'a', sizeof r.reason);
  memcpy(r.reason + 254, "\xc3\xa9", 2);
  if (kb__store_add_evaluation(s, &r, NULL, &err))
    return die("add long evaluation", &err);
  if (kb__store_flush(s, &err))
    return die("flush", &err);
  kb__store_close(s);
  return 0;
}

static int loop(const char *path, unsigned long max) {
  struct kb_error err = {0, ""};
  struct kb_store_task_info info = fx_info();
  struct kb_store *s = NULL;
  if (kb__store_open(path, &info, &s, &err))
    return die("open", &err);
  /* Like a restarted scheduler, re-send the last few (duplicates: no-ops), then go on. */
  long have = kb__store_evaluation_count(s);
  unsigned long first = have > 5 ? (unsigned long)(have - 5) : 0;
  for (unsigned long i = first; i < max; i++) {
    if (add_one(s, i, &err))
      return die("add", &err);
    if (i % 2 == 1) {
      if (kb__store_flush(s, &err))
        return die("flush", &err);
      printf("%ld %ld\n", kb__store_evaluation_count(s), kb__store_candidate_count(s));
      fflush(stdout);
    }
  }
  kb__store_close(s);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "fixture") == 0)
    return fixture(argv[2]);
  if (argc >= 3 && strcmp(argv[1], "loop") == 0) {
    unsigned long max = 100000000ul;
    if (argc >= 4) {
      char *end = NULL;
      errno = 0;
      max = strtoul(argv[3], &end, 10);
      if (errno != 0 || end == argv[3] || *end != '\0') {
        fprintf(stderr, "store_writer: bad MAX \"%s\"\n", argv[3]);
        return 2;
      }
    }
    return loop(argv[2], max);
  }
  fprintf(stderr, "usage: store_writer fixture PATH | store_writer loop PATH [MAX]\n");
  return 2;
}
