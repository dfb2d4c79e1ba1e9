/* Which prepared tasks the sandbox keeps (docs/sandbox.md, "prepare").
 *
 * A campaign cycles through its tasks, and a task prepared again costs its input draws and an
 * oracle run on every set: 0.26-0.36 s for the suite's conv2d, attention and matmul_f32 on an
 * H100, against 0.03-0.06 s for layernorm, softmax or scan, which hold 19.5 GiB each
 * (bench/results/gpu-tests/h100-2026-12-06-suite-prep-598e60c.txt). The sandbox keeps prepared
 * tasks within a budget of bytes, and when one more does not fit it drops those whose
 * preparation buys the least time per byte held.
 *
 * The rule is GreedyDual-Size (Cao and Irani, 1997): each task has a value
 *   H = L + (seconds its preparation took) / (GiB it holds),
 * set when it is prepared and again at each use; the task of least H goes first, and L (the
 * cache's age, 0 at the start) becomes the H of the task dropped last, so tasks not used for a
 * while fall behind those used since, whatever their own value.
 *
 * A task just prepared is needed at once (its evaluation follows the prepare), so it is never
 * dropped by its own prepare. When it is the task of least H and the others do not leave it
 * room, it is kept above the budget ("over") instead of displacing tasks worth more, and it is
 * the first to go at the next prepare of another task. So one big, cheap task costs at most its
 * own bytes beyond the budget, and never the expensive small tasks.
 *
 * Pure bookkeeping over slot numbers: the caller holds the tasks and frees them.
 */
#ifndef KB_SANDBOX_PREP_KEEP_H
#define KB_SANDBOX_PREP_KEEP_H

#include <stddef.h>

#define KB_PREP_SLOTS 64 /* tasks kept prepared at once */

struct kb__prep_keep {
  int used[KB_PREP_SLOTS];      /* 1: the slot holds a prepared task */
  size_t bytes[KB_PREP_SLOTS];  /* what its task holds, bytes */
  double cost[KB_PREP_SLOTS];   /* seconds its preparation took */
  double h[KB_PREP_SLOTS];      /* its GreedyDual-Size value */
  unsigned long long seen[KB_PREP_SLOTS]; /* the clock at its last use (ties go by it) */
  unsigned long long clock;     /* counts prepares and uses */
  double age;                   /* L: the value of the task dropped last */
  int over;                     /* the slot kept above the budget, -1: none */
};

/* Sets up `k` (the caller's) with no task. */
void kb__prep_keep_init(struct kb__prep_keep *k);

/* The slot a new task goes into: an empty one, or, with every slot taken, the one of least
 * value, which the caller frees and passes to kb__prep_keep_drop first. */
int kb__prep_keep_slot(const struct kb__prep_keep *k);

/* Records the task prepared into `slot`: `bytes` held, `cost_s` seconds its preparation took. */
void kb__prep_keep_add(struct kb__prep_keep *k, int slot, size_t bytes, double cost_s);

/* Records a use of the task in `slot` (a prepare that found it kept). */
void kb__prep_keep_use(struct kb__prep_keep *k, int slot);

/* Records that the caller freed the task in `slot`. */
void kb__prep_keep_drop(struct kb__prep_keep *k, int slot);

/* The next slot to free so that the tasks fit `budget` bytes beside the task just prepared in
 * `fresh` (never `fresh` itself), or -1 when nothing more is to go: the tasks fit, or every
 * other task is worth more than `fresh`, which is then kept above the budget (`over`). A
 * budget of 0 means no limit. The caller frees the slot, calls kb__prep_keep_drop and asks
 * again. */
int kb__prep_keep_next_drop(struct kb__prep_keep *k, int fresh, size_t budget);

/* The slot a prepare of another task frees first: the task kept above the budget by an
 * earlier prepare, or -1 (none). The caller frees it and calls kb__prep_keep_drop. */
int kb__prep_keep_over(const struct kb__prep_keep *k);

/* Bytes the kept tasks hold together. */
size_t kb__prep_keep_held(const struct kb__prep_keep *k);

#endif
