/* Which prepared tasks the sandbox keeps: GreedyDual-Size over slots (prep_keep.h). */
#include "prep_keep.h"

#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

void kb__prep_keep_init(struct kb__prep_keep *k) {
  memset(k, 0, sizeof *k);
  k->over = -1;
}

/* The value of keeping `slot` from now: the cache's age plus its preparation's seconds per GiB
 * (a task of no bytes counts as one byte). */
static double value(const struct kb__prep_keep *k, int slot) {
  double gib = (double)(k->bytes[slot] > 0 ? k->bytes[slot] : 1) / GIB;
  return k->age + k->cost[slot] / gib;
}

/* 1 when `a` goes before `b`: less value, or as much and used longer ago. */
static int before(const struct kb__prep_keep *k, int a, int b) {
  if (k->h[a] != k->h[b])
    return k->h[a] < k->h[b];
  return k->seen[a] < k->seen[b];
}

/* The kept task of least value but `skip` (-1: none), or -1 when there is none. */
static int least(const struct kb__prep_keep *k, int skip) {
  int at = -1;
  for (int i = 0; i < KB_PREP_SLOTS; i++)
    if (k->used[i] && i != skip && (at < 0 || before(k, i, at)))
      at = i;
  return at;
}

int kb__prep_keep_slot(const struct kb__prep_keep *k) {
  for (int i = 0; i < KB_PREP_SLOTS; i++)
    if (!k->used[i])
      return i;
  return least(k, -1);
}

void kb__prep_keep_add(struct kb__prep_keep *k, int slot, size_t bytes, double cost_s) {
  k->used[slot] = 1;
  k->bytes[slot] = bytes;
  k->cost[slot] = cost_s > 0 ? cost_s : 0;
  kb__prep_keep_use(k, slot);
}

void kb__prep_keep_use(struct kb__prep_keep *k, int slot) {
  k->h[slot] = value(k, slot);
  k->seen[slot] = ++k->clock;
}

void kb__prep_keep_drop(struct kb__prep_keep *k, int slot) {
  if (!k->used[slot])
    return;
  if (k->h[slot] > k->age)
    k->age = k->h[slot];
  k->used[slot] = 0;
  k->bytes[slot] = 0;
  if (k->over == slot)
    k->over = -1;
}

size_t kb__prep_keep_held(const struct kb__prep_keep *k) {
  size_t held = 0;
  for (int i = 0; i < KB_PREP_SLOTS; i++)
    if (k->used[i])
      held += k->bytes[i];
  return held;
}

int kb__prep_keep_next_drop(struct kb__prep_keep *k, int fresh, size_t budget) {
  if (budget == 0 || kb__prep_keep_held(k) <= budget)
    return -1;
  int drop = least(k, fresh);
  if (drop < 0 || before(k, fresh, drop)) {
    /* the task just prepared is worth less than any other: it stays only while it is used */
    k->over = fresh;
    return -1;
  }
  return drop;
}

int kb__prep_keep_over(const struct kb__prep_keep *k) {
  return k->over;
}
