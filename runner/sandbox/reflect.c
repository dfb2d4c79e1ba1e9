/* The reflection of the witness's host inputs (see reflect.h). */
#include "reflect.h"

#include <math.h>
#include <string.h>

#include "inputs.h"
#include "inputs_gen.h"

/* For each byte value, the mask (all ones or zero) of each of its eight bits, lowest first:
 * made once (the first call; the sandbox is one thread). */
static const uint32_t (*byte_masks(void))[8] {
  static uint32_t t[256][8];
  static int made;
  if (!made) {
    for (int b = 0; b < 256; b++)
      for (int j = 0; j < 8; j++)
        t[b][j] = ((b >> j) & 1) ? UINT32_MAX : 0u;
    made = 1;
  }
  return (const uint32_t (*)[8])t;
}

/* The reflection of kb__inputs_reflect for `set`: v -> `sum` - v, kept within [`lo`, `hi`]. */
struct reflection {
  double sum, lo, hi;
};

/* The reflection of `set` for `dtype` into *r; 0 when it leaves the elements as they are (an
 * integer dtype under a distribution other than integers). */
static int reflection_of(const struct kb_input_set *set, int dtype, struct reflection *r) {
  int integer = dtype == KB_I32 || dtype == KB_I64 || dtype == KB_U8 || dtype == KB_BOOL;
  switch ((enum kb_dist)set->dist) {
  case KB_DIST_UNIFORM:
    if (integer)
      return 0;
    r->sum = set->low + set->high;
    r->lo = kb__dtype_round(dtype, set->low);
    r->hi = kb__dtype_round(dtype, set->high);
    return 1;
  case KB_DIST_NORMAL:
    if (integer)
      return 0;
    r->sum = 2.0 * set->low;
    r->lo = -INFINITY;
    r->hi = INFINITY;
    return 1;
  case KB_DIST_INTEGERS: {
    int64_t lo;
    uint64_t span;
    if (!kb_gen_integer_range(set->low, set->high, &lo, &span))
      return 0;
    r->lo = (double)lo;
    r->hi = (double)lo + (double)(span - 1);
    r->sum = r->lo + r->hi;
    return 1;
  }
  }
  return 0;
}

int kb__inputs_reflect(const struct kb_input_set *set, uint64_t key, int dtype, void *data,
                       int64_t n, struct kb_error *err) {
  int size = kb_dtype_size(dtype);
  if (size == 0)
    return kb_error_set(err, KB_EINVAL, "cannot reflect inputs: unknown dtype %d", dtype);
  struct reflection r;
  if (n <= 0 || !reflection_of(set, dtype, &r))
    return KB_OK;
  if (dtype == KB_F32) { /* the common case, without a conversion per element */
    float *x = data;
    float sum = (float)r.sum, lo = (float)r.lo, hi = (float)r.hi;
    const uint32_t(*masks)[8] = byte_masks();
    for (int64_t w = 0; w * 64 < n; w++) {
      uint64_t bits = kb_gen_u64(key, (uint64_t)w);
      int64_t end = n - w * 64 < 64 ? n - w * 64 : 64;
      float *at = x + w * 64;
      /* each bit as a mask, eight from the table at a time, then a select the compiler makes
       * a vector one: a branch on random bits would miss half the time (6.2 ns an element
       * here against 0.35) */
      uint32_t flip[64];
      for (int g = 0; g < 8; g++)
        memcpy(flip + 8 * g, masks[(bits >> (8 * g)) & 0xff], sizeof masks[0]);
      if (end == 64) {
        for (int j = 0; j < 64; j++) {
          float v = at[j];
          float m = sum - v;
          int keep = (flip[j] != 0) & (m >= lo) & (m <= hi);
          at[j] = keep ? m : v;
        }
        continue;
      }
      for (int64_t j = 0; j < end; j++)
        if (flip[j] != 0 && sum - at[j] >= lo && sum - at[j] <= hi)
          at[j] = sum - at[j];
    }
    return KB_OK;
  }
  unsigned char *p = data;
  uint64_t bits = 0;
  for (int64_t i = 0; i < n; i++, bits >>= 1) {
    if (i % 64 == 0)
      bits = kb_gen_u64(key, (uint64_t)(i / 64));
    if (!(bits & 1))
      continue;
    double m = kb__dtype_round(dtype, r.sum - kb__dtype_load(dtype, p, i));
    if (m >= r.lo && m <= r.hi)
      kb__dtype_store(dtype, p + i * size, m);
  }
  return KB_OK;
}
