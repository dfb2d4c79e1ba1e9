/* SHA-256 through OpenSSL's EVP interface (see kb/hash.h). */
#include "kb/hash.h"

#include <openssl/evp.h>

#include "kb/alloc.h"
#include "kb/error.h"

struct kb_sha256 {
  EVP_MD_CTX *ctx; /* libcrypto digest context (owned) */
};

struct kb_sha256 *kb_sha256_new(void) {
  struct kb_sha256 *h = kb_malloc(sizeof *h);
  if (h == NULL)
    return NULL;
  h->ctx = EVP_MD_CTX_new();
  if (h->ctx == NULL || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
    kb_sha256_free(h);
    return NULL;
  }
  return h;
}

int kb_sha256_update(struct kb_sha256 *h, const void *data, size_t len) {
  if (len == 0)
    return KB_OK;
  return EVP_DigestUpdate(h->ctx, data, len) == 1 ? KB_OK : KB_EINTERNAL;
}

int kb_sha256_final_hex(struct kb_sha256 *h, char hex[65]) {
  static const char digits[] = "0123456789abcdef";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  int ok = EVP_DigestFinal_ex(h->ctx, md, &n) == 1 && n == 32;
  kb_sha256_free(h);
  if (!ok) {
    hex[0] = '\0';
    return KB_EINTERNAL;
  }
  for (unsigned int i = 0; i < n; i++) {
    hex[2 * i] = digits[md[i] >> 4];
    hex[2 * i + 1] = digits[md[i] & 0x0F];
  }
  hex[64] = '\0';
  return KB_OK;
}

void kb_sha256_free(struct kb_sha256 *h) {
  if (h == NULL)
    return;
  EVP_MD_CTX_free(h->ctx);
  kb_free(h);
}

int kb_sha256_hex(const void *data, size_t len, char hex[65], struct kb_error *err) {
  struct kb_sha256 *h = kb_sha256_new();
  if (h == NULL)
    return kb_error_set(err, KB_ENOMEM, "sha-256: cannot create a digest context");
  if (kb_sha256_update(h, data, len) != KB_OK) {
    kb_sha256_free(h);
    return kb_error_set(err, KB_EINTERNAL, "sha-256: digest update failed");
  }
  if (kb_sha256_final_hex(h, hex) != KB_OK)
    return kb_error_set(err, KB_EINTERNAL, "sha-256: digest final failed");
  return KB_OK;
}
