/* Test helper: opens each store file as a restarted scheduler does (kb__store_open recovers a
 * file a killed writer left: h5clear, cut back to the last commit) and closes it, so h5dump and
 * plain h5py can read it. Prints "<file> recovered=<bits> evaluations=<n>" per file.
 *
 * usage: h5_recover FILE...      exit 0, or 1 when a file cannot be opened (message on stderr)
 */
#include <stdio.h>

#include "kb/error.h"
#include "store.h"

int main(int argc, char **argv) {
  int failed = 0;
  for (int i = 1; i < argc; i++) {
    struct kb_error err = {0};
    struct kb_store *s = NULL;
    if (kb__store_open(argv[i], NULL, &s, &err) != KB_OK) {
      fprintf(stderr, "h5_recover: %s\n", err.msg);
      failed = 1;
      continue;
    }
    printf("%s recovered=%d evaluations=%ld\n", argv[i], kb__store_recovered(s),
           kb__store_evaluation_count(s));
    kb__store_close(s);
  }
  return failed;
}
