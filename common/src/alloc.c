/* Allocation wrappers with overflow checks and a fault-injection hook (see kb/alloc.h). */
#include "kb/alloc.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Allocations left before failures start; -1 = never fail. Atomic: runners are threaded. */
static atomic_long fail_countdown = -1;

void kb_alloc_fail_after(long n) { atomic_store(&fail_countdown, n); }

/* Returns 1 when this allocation should fail (fault injection armed and expired). */
static int should_fail(void) {
  long left = atomic_load(&fail_countdown);
  if (left < 0)
    return 0;
  if (left == 0)
    return 1;
  atomic_fetch_sub(&fail_countdown, 1);
  return 0;
}

void *kb_malloc(size_t size) {
  if (should_fail())
    return NULL;
  return malloc(size ? size : 1);
}

void *kb_calloc(size_t n, size_t size) {
  if (size != 0 && n > SIZE_MAX / size)
    return NULL;
  if (should_fail())
    return NULL;
  return calloc(n ? n : 1, size ? size : 1);
}

void *kb_reallocarray(void *p, size_t n, size_t size) {
  if (size != 0 && n > SIZE_MAX / size)
    return NULL;
  if (should_fail())
    return NULL;
  size_t total = n * size;
  return realloc(p, total ? total : 1);
}

char *kb_strdup(const char *s) { return kb_strndup(s, strlen(s)); }

char *kb_strndup(const char *s, size_t n) {
  size_t len = strnlen(s, n);
  char *copy = kb_malloc(len + 1);
  if (copy == NULL)
    return NULL;
  memcpy(copy, s, len);
  copy[len] = '\0';
  return copy;
}

void kb_free(void *p) { free(p); }
