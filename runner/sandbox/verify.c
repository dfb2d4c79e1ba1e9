/* Output verification and poisoning (see verify.h). */
#include "verify.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "inputs.h"
#include "kb_kernel.h"

/* Quiet NaNs with a recognisable payload ("bad"), one per float width. */
#define POISON_F32 UINT32_C(0x7fcbadad)
#define POISON_F64 UINT64_C(0x7ff8badbadbadbad)
#define POISON_F16 UINT16_C(0x7ead)
#define POISON_BF16 UINT16_C(0x7fed)
#define POISON_BYTE 0xa5

static int is_integer_dtype(int dtype) {
  return dtype == KB_I32 || dtype == KB_I64 || dtype == KB_U8 || dtype == KB_BOOL;
}

/* Absolute difference of two integer elements, exact up to the double's precision and never 0
 * for different values. */
static double int_abs_err(int dtype, const void *got, const void *expected, int64_t i) {
  if (dtype == KB_I64) {
    int64_t g, e;
    memcpy(&g, (const unsigned char *)got + i * 8, sizeof g);
    memcpy(&e, (const unsigned char *)expected + i * 8, sizeof e);
    if (g == e)
      return 0;
    double d = fabs((double)g - (double)e);
    return d > 0 ? d : 1;
  }
  return fabs(kb__dtype_load(dtype, got, i) - kb__dtype_load(dtype, expected, i));
}

int kb__verify(int dtype, const void *got, const void *expected, int64_t n, double atol,
              double rtol, struct kb_verify_report *rep) {
  memset(rep, 0, sizeof *rep);
  rep->first_bad = -1;
  if (kb_dtype_size(dtype) == 0) {
    rep->first_bad = 0;
    rep->got = NAN;
    rep->expected = NAN;
    return 0;
  }
  int integer = is_integer_dtype(dtype);
  for (int64_t i = 0; i < n; i++) {
    double g = kb__dtype_load(dtype, got, i);
    double e = kb__dtype_load(dtype, expected, i);
    int ok = isfinite(g) && isfinite(e);
    if (ok) {
      double abs_err = integer ? int_abs_err(dtype, got, expected, i) : fabs(g - e);
      if (abs_err > rep->max_abs_err)
        rep->max_abs_err = abs_err;
      if (e != 0 && abs_err / fabs(e) > rep->max_rel_err)
        rep->max_rel_err = abs_err / fabs(e);
      double tol = atol + rtol * fabs(e);
      double use = abs_err == 0 ? 0 : tol > 0 ? abs_err / tol : INFINITY;
      if (use > rep->max_tol_use)
        rep->max_tol_use = use;
      rep->sum_sq_tol_use += use * use;
      ok = abs_err <= tol;
      if (dtype == KB_BOOL && g != 0 && g != 1)
        ok = 0;
    }
    rep->checked++;
    if (!ok) {
      if (rep->bad == 0) {
        rep->first_bad = i;
        rep->got = g;
        rep->expected = e;
      }
      rep->bad++;
    }
  }
  return rep->bad == 0;
}

/* `n` copies of the `width`-byte pattern `v` (its low bytes, host order) at `p`. */
static void fill_pattern(unsigned char *p, int64_t n, uint64_t v, size_t width) {
  uint32_t v32 = (uint32_t)v;
  uint16_t v16 = (uint16_t)v;
  const void *src = width == 8 ? (const void *)&v : width == 4 ? (const void *)&v32 : &v16;
  for (int64_t i = 0; i < n; i++)
    memcpy(p + i * (int64_t)width, src, width);
}

void kb__poison(int dtype, void *data, int64_t n) {
  unsigned char *p = data;
  switch ((enum kb_dtype)dtype) {
  case KB_F32: fill_pattern(p, n, POISON_F32, 4); return;
  case KB_F64: fill_pattern(p, n, POISON_F64, 8); return;
  case KB_F16: fill_pattern(p, n, POISON_F16, 2); return;
  case KB_BF16: fill_pattern(p, n, POISON_BF16, 2); return;
  case KB_I32:
  case KB_I64:
  case KB_U8:
  case KB_BOOL:
    memset(p, POISON_BYTE, (size_t)n * (size_t)kb_dtype_size(dtype));
    return;
  }
}

void kb__verify_describe(const struct kb_verify_report *rep, char *out, size_t size) {
  if (size == 0)
    return;
  out[0] = '\0';
  if (rep->first_bad < 0)
    return;
  /* snprintf truncation is acceptable here: the text is a diagnostic */
  int n = snprintf(out, size, "element %lld is %.9g, expected %.9g (%lld of %lld bad)",
                   (long long)rep->first_bad, rep->got, rep->expected, (long long)rep->bad,
                   (long long)rep->checked);
  if (n < 0)
    out[0] = '\0';
}
