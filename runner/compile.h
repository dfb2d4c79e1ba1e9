/* Compiling host candidates into a content-addressed cache.
 *
 * A library is built with `<cc> -O2 -std=c11 -shared -fPIC -I<abi dir> <knobs> <flags>
 * -o lib.so candidate.c -lm` in a private temporary folder of the cache (cwd there, so the
 * compiler's messages name "candidate.c:LINE:COL"), with a timeout, and renamed into place as
 * <cache>/<key>.so, where the key is the SHA-256 of the source, knobs, flags, the compiler
 * command and its `--version` output, and the ABI header. rename() is atomic, so any number of
 * runners can share one cache folder: the worst a race costs is one duplicate build. The
 * trimmed compiler output is kept next to it as <key>.log; a failed build's output as
 * <key>.err, so a candidate that does not compile is not compiled again either (a build that
 * timed out is not cached: the next try may be on a quieter machine).
 */
#ifndef KB_RUNNER_COMPILE_H
#define KB_RUNNER_COMPILE_H

#include "kb/candidate.h"

struct kb_error;

/* Bytes of compiler output kept: the tail, where the last errors are. */
#define KB__COMPILE_LOG_MAX 4096

struct kb__compiler {
  char *cache_dir;   /* absolute folder of the cache (owned) */
  char **argv;       /* compiler command split on blanks, NULL-terminated (owned) */
  char *version;     /* the compiler's `--version` output (owned) */
  char *include_dir; /* folder holding kb_kernel.h (owned) */
  char abi_hash[KB_CAND_ID_LEN + 1]; /* SHA-256 of kb_kernel.h */
  double timeout_s;  /* one build at most, seconds */
};

/* Sets up `cc` (caller-owned): creates `cache_dir` (borrowed) and its parents when missing,
 * splits `command` (borrowed; "cc" when NULL) on blanks, runs it with --version, and reads
 * kb_kernel.h from `include_dir` (borrowed). Errors: KB_EIO (cache folder, header),
 * KB_ECOMPILE (the compiler does not run), KB_ECHILD, KB_ENOMEM. Released on failure. */
int kb__compiler_init(struct kb__compiler *cc, const char *cache_dir, const char *command,
                      const char *include_dir, struct kb_error *err);
/* Frees the contents of `cc`; NULL is fine. */
void kb__compiler_release(struct kb__compiler *cc);

struct kb__build {
  int ok;                 /* 1: lib_path holds the library; 0: the source does not build */
  int cached;             /* 1: taken from the cache, no compiler ran */
  double seconds;         /* compiler wall time; 0 when cached */
  char key[KB_CAND_ID_LEN + 1]; /* cache key (hex) */
  char *lib_path;         /* absolute path of the library when ok (owned) */
  char *log;              /* trimmed compiler output, NULL when it printed nothing (owned) */
  char reason[256];       /* why it does not build, "" when ok */
};

/* Empties `b` (caller-owned) for kb__compile; kb__build_release() frees its contents. */
void kb__build_init(struct kb__build *b);
void kb__build_release(struct kb__build *b);

/* Builds `source` with `knobs` and `flags` (all borrowed, "" for none) or finds it in the cache,
 * filling `b` (initialised; its old contents are released first). A source that does not
 * build, a knob or flag that is not allowed (knobs must be -D/-U options, flags options that
 * do not name the output), and a build that times out all give KB_OK with b->ok = 0 and a
 * reason. Errors, for a runner that cannot build anything: KB_EIO (cache folder), KB_ECHILD
 * (the compiler cannot be started), KB_ENOMEM, KB_EINTERNAL (hashing). */
int kb__compile(const struct kb__compiler *cc, const char *source, const char *knobs,
                const char *flags, struct kb__build *b, struct kb_error *err);

#endif
