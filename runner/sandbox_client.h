/* The runner's side of the sandbox: starts kb-sandbox, talks to it, watches it.
 *
 * The child is started lazily, on the first call, with posix_spawn (never fork: a CUDA runner
 * has threads and, in the child, a CUDA context), in its own process group, in a fresh mkdtemp
 * working folder (removed when the child is gone), with a scrubbed environment
 * (kb__sandbox_env), the protocol on a socket that is its stdin and stdout, and its stderr on a
 * second socket whose tail is kept for crash reasons. It lives across evaluations. A call sends one
 * request and waits for the reply until the call's timeout (the watchdog: SIGKILL to the
 * child's whole group), the child's death (end of file; reaped, its signal or exit status and
 * stderr tail reported), or the stop flag. A child that died, was killed, or said it is unusable
 * ("fatal": true in a reply, after which it exits by itself) is restarted by the next call; the
 * time each start took (spawn to hello) is kept and logged.
 */
#ifndef KB_RUNNER_SANDBOX_CLIENT_H
#define KB_RUNNER_SANDBOX_CLIENT_H

#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

struct kb_error;
struct kb__sandbox; /* opaque */

/* Bytes of the child's stderr kept for reasons. */
#define KB__SANDBOX_TAIL 2048

/* Which sandbox program serves a task: kb-sandbox[-cuda] (C, CUDA oracles) or the PyTorch
 * worker kb_sandbox_torch.py (tasks whose oracle is a PyTorch module), which speaks the same
 * protocol and is started the same way, under the interpreter $KB_PYTHON (default
 * /usr/bin/python3). */
enum kb__sandbox_worker { KB__SANDBOX_NATIVE = 0, KB__SANDBOX_TORCH };

#define KB__SANDBOX_RO_MAX 8

struct kb__sandbox_opts {
  const char *program;      /* the sandbox program, or the worker script for KB__SANDBOX_TORCH;
                               NULL: kb__sandbox_program() / kb__sandbox_torch_script()
                               (borrowed) */
  int worker;               /* enum kb__sandbox_worker */
  int trusted;              /* start it with --trusted: it refuses eval and is not confined (a
                               PyTorch worker times torch eager and torch.compile; both run
                               the task's reference for the witness, witness.h) */
  const char *backend;      /* "host" or "cuda" (borrowed; copied) */
  int device;               /* CUDA ordinal */
  double start_timeout_s;   /* spawn to hello at most; <= 0: 60 s */
  volatile sig_atomic_t *stop; /* set: calls end early, KB__SB_STOPPED (borrowed; may be NULL) */
  const char *ro[KB__SANDBOX_RO_MAX]; /* folders and files the child may read (its confinement,
                                         docs/sandbox.md): the build cache, where candidates,
                                         oracles and task files live; each must exist when the
                                         child starts (borrowed; copied, made absolute) */
  int n_ro;
  const char *jit_dir;      /* a trusted PyTorch worker's Triton and inductor caches (--jit: the
                               compile pool's `<cache>/reference.jit`, where torch.compile of the
                               task's module is compiled ahead; compile.h); NULL: its own
                               (borrowed; created when missing, copied absolute). Refused
                               (KB_EINVAL) for a confined one; KB_EIO when it cannot be made. */
};

/* How a call ended. */
enum kb__sb_outcome {
  KB__SB_REPLY = 0, /* a reply arrived: `reply` */
  KB__SB_TIMEOUT,   /* none before the timeout; the child's group was killed */
  KB__SB_DIED,      /* the child ended first (signal or exit, and its stderr tail) */
  KB__SB_STOPPED,   /* the stop flag was set first; the child's group was killed */
  KB__SB_FORGED     /* a frame the child's own code did not send for this request (without
                       the request's nonce, or not a protocol message): code it runs wrote on
                       the protocol socket; the child's group was killed (`detail`) */
};

struct kb__sb_call {
  int outcome;          /* enum kb__sb_outcome */
  json_t *reply;        /* the reply (owned; json_decref) for KB__SB_REPLY, else NULL */
  int signal;           /* KB__SB_DIED: the signal that ended the child, 0 when it exited */
  int exit_code;        /* KB__SB_DIED: its exit status when it exited */
  double seconds;       /* from sending to the outcome, wall clock */
  char tail[KB__SANDBOX_TAIL + 1]; /* the child's stderr during this call (tail), NUL-ended */
  char detail[160];     /* KB__SB_FORGED: what was wrong with the frame, NUL-ended */
};

/* The child's arguments: --backend, --device, --dir, --parent and one --ro PATH per `ro` path
 * (both the C sandboxes and the PyTorch worker take them); it confines itself with them before
 * it says hello, and its hello's "confinement" says the level it reached. */

/* Finds the sandbox program of `backend` ("host": kb-sandbox, which links no CUDA library;
 * "cuda": kb-sandbox-cuda) in $KB_SANDBOX_DIR, else next to this program (/proc/self/exe), else
 * in the build's KB_SANDBOX_DIR_DEFAULT. Returns a new string (kb_free), or NULL when out of
 * memory. */
char *kb__sandbox_program(const char *backend);
/* kb-tool-guard (runner/guard/guard.h), found as kb__sandbox_program finds kb-sandbox. Returns a
 * new string (kb_free), or NULL when out of memory. */
char *kb__tool_guard_program(void);
/* Finds the PyTorch worker kb_sandbox_torch.py the same way (a new string, kb_free; NULL when
 * out of memory). */
char *kb__sandbox_torch_script(void);
/* The path (new; NULL on ENOMEM) of kb_build_modelnew.py, the compile tier of KernelBench-format
 * candidates (compile_kb.c), found as kb__sandbox_torch_script() finds the worker. */
char *kb__sandbox_builder_script(void);
/* The interpreter of the PyTorch worker: $KB_PYTHON when set, else /usr/bin/python3
 * (borrowed, static or the environment's). */
const char *kb__sandbox_python(void);

/* The environment the child gets, made from `env` (borrowed, NULL-terminated, "NAME=value"):
 * only PATH, LD_LIBRARY_PATH, CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, LANG, LC_ALL, TZ, the
 * sanitizers' *SAN_OPTIONS and KB_CONFINE_OPTIONAL (the PyTorch worker runs unconfined when
 * libkb-confine.so is missing, and says so in its hello) are kept, never a name that looks like a secret (KB_REDIS_PASSWORD*,
 * *_KEY, *_TOKEN, *_SECRET, *_PASSWORD, *_PASSWD, *_CREDENTIALS); HOME and TMPDIR are set to
 * `dir` (borrowed). Returns a new NULL-terminated array (kb__env_free), or NULL when out of
 * memory. */
char **kb__sandbox_env(char *const *env, const char *dir);
void kb__env_free(char **env);
/* 1 when the variable name `name` (up to `len` bytes) looks like a secret. */
int kb__env_secret(const char *name, size_t len);

/* Creates the client (nothing starts yet) in `*out` (new; kb__sandbox_free). Errors:
 * KB_ENOMEM, KB_EINVAL (bad backend or worker), KB_ENOTFOUND (kb-sandbox not found or not
 * executable; for the PyTorch worker: the interpreter not executable or the script not
 * readable). */
int kb__sandbox_new(const struct kb__sandbox_opts *o, struct kb__sandbox **out,
                    struct kb_error *err);

/* Asks a running child to quit (1 s), then kills its group, reaps it, removes its folder, and
 * frees `sb`. NULL is fine. */
void kb__sandbox_free(struct kb__sandbox *sb);

/* Starts the child unless it runs, and waits for its hello. Errors: KB_ECHILD (it cannot be
 * started, or died or was silent before saying hello: the message carries its stderr tail),
 * KB_EINTERRUPTED (stop flag without a grace time, or the grace ran out before its hello),
 * KB_ENOMEM, KB_EIO (working folder). */
int kb__sandbox_start(struct kb__sandbox *sb, struct kb_error *err);

/* Sends `req` (borrowed) with a "nonce" of its own (16 random bytes in hex, which the child's
 * code echoes in its reply and candidate code never sees) and waits up to `timeout_s` seconds
 * for the reply, starting the child first when needed (that start is not counted in the
 * timeout). A child that wrote anything since the last reply is replaced first (logged). Fills
 * `call` (caller-owned; reply released with kb__sb_call_release): a reply without the nonce,
 * or one that is not a protocol message, is KB__SB_FORGED (the child is killed: it cannot be
 * trusted any more). Returns KB_OK whenever an outcome is known; errors of
 * kb__sandbox_start(), KB_ENOMEM, KB_EIO when the kernel gives no random bytes. */
int kb__sandbox_call(struct kb__sandbox *sb, const json_t *req, double timeout_s,
                     struct kb__sb_call *call, struct kb_error *err);
void kb__sb_call_release(struct kb__sb_call *call);

/* A request that asks back before it replies (the witness's "witness_positions", witness.h):
 * each frame whose "op" is `op` that the child sends under the request's nonce before its reply
 * is given to `fn`, which returns KB_OK with *answer (new; sent back with the nonce), or
 * another code with `detail` saying why the frame is not one the request expects (the call is
 * then KB__SB_FORGED: the child is killed). */
struct kb__sb_answerer {
  const char *op;
  int (*fn)(void *ctx, const json_t *frame, json_t **answer, char *detail, size_t size);
  void *ctx;
};

/* kb__sandbox_call, with `ans` (borrowed; NULL: none) answering the child's frames of its op
 * until the reply; the call's `seconds` hold those round trips too. */
int kb__sandbox_call_answering(struct kb__sandbox *sb, const json_t *req, double timeout_s,
                               const struct kb__sb_answerer *ans, struct kb__sb_call *call,
                               struct kb_error *err);

/* Replaces the stop flag (borrowed; NULL: none). */
void kb__sandbox_set_stop(struct kb__sandbox *sb, volatile sig_atomic_t *stop);

/* Once the stop flag is set, a call under way may still run `seconds` (default 0) before it
 * ends as KB__SB_STOPPED: an evaluation that ends within that grace keeps its verdict. */
void kb__sandbox_set_grace(struct kb__sandbox *sb, double seconds);

/* Kills the child's group and reaps it, if one runs (the next call starts a new one). */
void kb__sandbox_kill(struct kb__sandbox *sb);

/* The running child's pid, 0 when none. */
pid_t kb__sandbox_pid(const struct kb__sandbox *sb);
/* The running child's hello reply (borrowed; NULL when none runs). */
json_t *kb__sandbox_hello(const struct kb__sandbox *sb);
/* Children started so far, and how long the last start took (spawn to hello), seconds. */
int kb__sandbox_starts(const struct kb__sandbox *sb);
double kb__sandbox_last_start_s(const struct kb__sandbox *sb);
/* The confinement level the last child's hello reported ("none" when it named none; "" before
 * any hello; borrowed): kept after the child died, for the verdict of the call it died in. */
const char *kb__sandbox_confinement(const struct kb__sandbox *sb);
/* The running child's working folder (borrowed; NULL when none runs). */
const char *kb__sandbox_dir(const struct kb__sandbox *sb);

#endif
