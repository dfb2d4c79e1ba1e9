/* kb/hash.h: SHA-256 against the FIPS 180-2 test vectors, one-shot and incremental (in pieces
 * of every size), and allocation failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/error.h"
#include "kb/hash.h"

static const struct {
  const char *text;
  const char *digest;
} vectors[] = {
    {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
    {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
    {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
};

static void test_known_digests(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
    struct kb_error err = {0};
    char hex[65];
    assert_int_equal(kb_sha256_hex(vectors[i].text, strlen(vectors[i].text), hex, &err), KB_OK);
    assert_string_equal(hex, vectors[i].digest);
  }
}

/* A million "a": many blocks, through the incremental interface in uneven pieces. */
static void test_million_a(void **state) {
  (void)state;
  size_t n = 1000000;
  char *a = malloc(n);
  assert_non_null(a);
  memset(a, 'a', n);
  struct kb_sha256 *h = kb_sha256_new();
  assert_non_null(h);
  size_t done = 0;
  for (size_t piece = 1; done < n; piece = piece * 3 + 1) {
    size_t take = piece < n - done ? piece : n - done;
    assert_int_equal(kb_sha256_update(h, a + done, take), KB_OK);
    done += take;
  }
  char hex[65];
  assert_int_equal(kb_sha256_final_hex(h, hex), KB_OK);
  assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  free(a);
}

/* Splitting the input anywhere (an empty update included) gives the one-shot digest. */
static void test_incremental_equals_one_shot(void **state) {
  (void)state;
  const char *text = vectors[2].text;
  size_t len = strlen(text);
  for (size_t cut = 0; cut <= len; cut++) {
    struct kb_sha256 *h = kb_sha256_new();
    assert_non_null(h);
    assert_int_equal(kb_sha256_update(h, text, cut), KB_OK);
    assert_int_equal(kb_sha256_update(h, NULL, 0), KB_OK);
    assert_int_equal(kb_sha256_update(h, text + cut, len - cut), KB_OK);
    char hex[65];
    assert_int_equal(kb_sha256_final_hex(h, hex), KB_OK);
    if (strcmp(hex, vectors[2].digest) != 0)
      fail_msg("cut at %zu: %s, want %s", cut, hex, vectors[2].digest);
  }
  /* an unfinished context is freed without a digest; NULL is fine */
  struct kb_sha256 *h = kb_sha256_new();
  assert_non_null(h);
  assert_int_equal(kb_sha256_update(h, "abc", 3), KB_OK);
  kb_sha256_free(h);
  kb_sha256_free(NULL);
}

static void test_allocation_failures(void **state) {
  (void)state;
  kb_alloc_fail_after(0);
  struct kb_sha256 *h = kb_sha256_new();
  kb_alloc_fail_after(-1);
  assert_null(h);

  struct kb_error err = {0};
  char hex[65] = "untouched";
  kb_alloc_fail_after(0);
  int rc = kb_sha256_hex("abc", 3, hex, &err);
  kb_alloc_fail_after(-1);
  assert_int_equal(rc, KB_ENOMEM);
  assert_int_equal(err.code, KB_ENOMEM);
  assert_string_equal(err.msg, "sha-256: cannot create a digest context");
  /* and it works again once the allocations do */
  kb_error_clear(&err);
  assert_int_equal(kb_sha256_hex("abc", 3, hex, &err), KB_OK);
  assert_string_equal(hex, vectors[1].digest);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_digests),
      cmocka_unit_test(test_million_a),
      cmocka_unit_test(test_incremental_equals_one_shot),
      cmocka_unit_test(test_allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
