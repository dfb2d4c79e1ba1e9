/* Output verification: a candidate's outputs against the oracle's, element by element.
 *
 * An element passes when both values are finite and |got - expected| <= atol + rtol * |expected|
 * (the numpy.allclose rule). NaN and infinity never pass, whatever the tolerance and whatever the
 * reference holds. Integer and bool elements follow the same rule on their values (the default
 * integer tolerance is 0: exact); a bool element must be exactly 0 or 1.
 *
 * Poisoning: before every call the outputs are filled with a pattern no correct kernel leaves
 * behind (a quiet NaN with payload for floats, the byte 0xa5 for integers, which is not a valid
 * bool), so an element the candidate never wrote cannot pass.
 */
#ifndef KB_SANDBOX_VERIFY_H
#define KB_SANDBOX_VERIFY_H

#include <stddef.h>
#include <stdint.h>

struct kb_verify_report {
  int64_t checked;    /* elements compared */
  int64_t bad;        /* elements that failed */
  int64_t first_bad;  /* flat index of the first failing element, -1 when none */
  double got;         /* value at first_bad (as double), NaN included */
  double expected;    /* reference at first_bad */
  double max_abs_err; /* over the elements where both values are finite; 0 when none */
  double max_rel_err; /* |got - expected| / |expected| over those with expected != 0 */
  double max_tol_use; /* the most of its tolerance a finite element used: |got - expected| /
                         (atol + rtol |expected|), 0 where they are equal, INFINITY where they
                         differ under a tolerance of 0; over 1 fails (a margin check's measure:
                         tests/tasks/test_seed_margin.c) */
  double sum_sq_tol_use; /* the sum of the squares of every finite element's use, as above */
};

/* Compares `n` elements of `dtype` at `got` against `expected` (both borrowed) and fills `rep`
 * (caller-owned). Returns 1 when every element passes, 0 otherwise (also for an unknown dtype:
 * then rep->first_bad is 0 and nothing counts as checked). */
int kb__verify(int dtype, const void *got, const void *expected, int64_t n, double atol,
              double rtol, struct kb_verify_report *rep);

/* Fills `n` elements of `dtype` at `data` (borrowed) with the poison pattern. An unknown dtype
 * leaves `data` untouched. */
void kb__poison(int dtype, void *data, int64_t n);

/* Writes "element 12 is nan, expected 1.5" style text for `rep`'s first bad element into `out`
 * (`size` bytes, always NUL-terminated when size > 0); "" when nothing failed. */
void kb__verify_describe(const struct kb_verify_report *rep, char *out, size_t size);

#endif
