/* Error codes and the error-detail struct used by every kernelbrain function.
 *
 * A fallible function returns an `int` code from `enum kb_err` (KB_OK on success) and, when the
 * caller passes a `struct kb_error`, writes a human-readable message into it. The first error set
 * stays: later kb_error_set() calls on the same struct do nothing, so the root cause survives
 * cleanup paths. Library code never prints and exits; only main() decides to die.
 */
#ifndef KB_ERROR_H
#define KB_ERROR_H

/* X(NAME, description). New codes go last; none is ever renumbered. The Lua scripts reply
 * "KB_<NAME> detail" and kb_err_from_name() maps NAME back to the code. */
#define KB_ERRNO_MAP(X)                                                                        \
  X(OK, "success")                                                                             \
  X(NOMEM, "out of memory")                                                                    \
  X(INVAL, "invalid argument")                                                                 \
  X(IO, "input/output error")                                                                  \
  X(PARSE, "malformed input")                                                                  \
  X(CONN, "cannot reach redis")                                                                \
  X(REDIS, "redis command failed")                                                             \
  X(EXISTS, "already exists")                                                                  \
  X(NOTFOUND, "not found")                                                                     \
  X(EMPTY, "nothing ready")                                                                    \
  X(BUDGET, "budget exhausted")                                                                \
  X(LEASE, "lease lost")                                                                       \
  X(STATE, "wrong campaign state")                                                             \
  X(COMPILE, "compile failed")                                                                 \
  X(LOAD, "cannot load library")                                                               \
  X(HDF5, "hdf5 error")                                                                        \
  X(CHILD, "child process failed")                                                             \
  X(TIMEOUT, "timed out")                                                                      \
  X(AUTH, "redis authentication failed")                                                       \
  X(INTERRUPTED, "interrupted")                                                                \
  X(CONFINE, "sandbox confinement below the campaign's requirement")                           \
  X(INTERNAL, "internal error")                                                               \
  X(WRITE, "results cannot be written (disk full, quota, read-only or i/o error)")            \
  X(LOCKED, "held by another process")                                                         \
  X(NOTREDIS, "the peer is not a redis server")                                               \
  X(GONE, "the campaign is gone from redis")

enum kb_err {
#define KB_ERR_ENUM(name, desc) KB_E##name,
  KB_ERRNO_MAP(KB_ERR_ENUM)
#undef KB_ERR_ENUM
  KB_ERR_COUNT
};
#define KB_OK KB_EOK

struct kb_error {
  int code;      /* enum kb_err; KB_OK while no error was set */
  char msg[512]; /* "what failed: why", lowercase, no full stop */
};

/* Description of a code ("budget exhausted"; static); never NULL, "unknown error" for bad
 * codes. */
const char *kb_strerror(int code);
/* Symbolic name of a code without prefix ("BUDGET"; static); never NULL, "UNKNOWN" for bad
 * codes. */
const char *kb_err_name(int code);
/* Code for a symbolic name (borrowed) as kb_err_name() gives it; KB_EINTERNAL when unknown. */
int kb_err_from_name(const char *name);

/* Records `code` and a printf-style message in `err` unless it already holds an error.
 * `err` may be NULL. Returns `code`, so `return kb_error_set(err, KB_EIO, "...")` reads well. */
int kb_error_set(struct kb_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Clears `err` (may be NULL) for reuse. */
void kb_error_clear(struct kb_error *err);

/* Process exit codes, documented in docs/cli.md ("Exit codes") and every --help. */
enum kb_exit {
  KB_EXIT_OK = 0,
  KB_EXIT_FAILURE = 1,  /* anything not listed below */
  KB_EXIT_USAGE = 2,    /* bad command line */
  KB_EXIT_INPUT = 3,    /* malformed campaign, task bundle or candidate */
  KB_EXIT_REDIS = 4,    /* redis unreachable or authentication failed, or the campaign gone
                           from it mid-run (a redis restarted without its data) */
  KB_EXIT_CONFLICT = 5, /* campaign already exists, or in the wrong state */
  KB_EXIT_BUDGET = 6,   /* budget exhausted before the work was done */
  KB_EXIT_CONFINE = 7,  /* the node cannot confine sandboxes as the campaign's sandbox.require
                           asks (kb-runner; docs/campaign.md) */
  KB_EXIT_INTERRUPTED = 130,
  KB_EXIT_DEVICE = 8,   /* the sandbox cannot open its device (no driver, no such GPU) */
  KB_EXIT_WRITE = 9     /* results cannot be written: ENOSPC, EDQUOT, EROFS, EIO, EPERM; every
                           result stays in redis unacknowledged (kb-scheduler, kb-launch); or a
                           runner's build cache cannot be written: its items are released
                           (kb-runner) */
};
/* Maps an error code to the process exit code main() should return. */
int kb_exit_code(int code);

#endif
