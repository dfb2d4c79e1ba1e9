/* Confinement of a sandbox process (see confine.h; docs/sandbox.md, "Confinement").
 *
 * It allocates with libc's calloc, strdup and free, not kb/alloc.h, and reports failures as -1
 * with a reason buffer, not struct kb_error: this file is also built alone, without libkb, as
 * libkb-confine.so for the PyTorch worker (ctypes passes the buffer). */
#define _GNU_SOURCE
#include "confine.h"
#include "proto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <unistd.h>

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "confine.c: the open gate knows x86-64 and aarch64 only"
#endif

/* libkb-confine.so exports the three functions of CONTRACTS.md, kb_confine_code_sum and
 * kb_confine_no_unix_sockets (the compile tier's filter) only */
#ifdef KB_CONFINE_EXPORT
#define KB_CONFINE_API __attribute__((visibility("default")))
#else
#define KB_CONFINE_API
#endif

/* ---- Landlock: the ABI's access bits (the system headers may predate ABI 4..7) ------------- */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#endif
#define KB_LL_NET_BIND_TCP (1ULL << 0)            /* ABI 4 */
#define KB_LL_NET_CONNECT_TCP (1ULL << 1)
#define KB_LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define KB_LL_SCOPE_SIGNAL (1ULL << 1)
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif
#define KB_LL_ABI_KNOWN 7 /* ABI 7 adds audit flags only, no access right */

/* struct landlock_ruleset_attr as of ABI 6 (the kernel takes the size we pass) */
struct kb__ll_ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};
struct kb__ll_path_beneath {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

#define LL_FILE_BITS                                                                       \
  (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE | \
   LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)

/* Every filesystem right of `abi`. */
static uint64_t ll_fs_rights(int abi) {
  uint64_t r = (1ULL << 13) - 1; /* ABI 1: EXECUTE .. MAKE_SYM */
  if (abi >= 2)
    r |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3)
    r |= LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi >= 5)
    r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  return r;
}

static int ll_abi(int *err) {
  long v = syscall(__NR_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  *err = v < 0 ? errno : 0;
  return v < 0 ? 0 : (int)v;
}

/* ---- the process-wide state ----------------------------------------------------------------- */
#define NAMES_MAX 512
#define NAME_LEN 28
static struct {
  int applied;
  int profile;
  int census;
  struct kb__confine_level level;
  char names[NAMES_MAX][NAME_LEN]; /* syscall names, filled before the filter (async-safe use) */
  unsigned char seen[NAMES_MAX];   /* census: reported already (bit 0 outside, bit 1 in window) */
} st = {.level = {.level = "none"}};

static volatile sig_atomic_t load_window; /* 1 while the engine dlopen()s */

void kb__confine_load_begin(void) { load_window = 1; }
void kb__confine_load_end(void) { load_window = 0; }
const char *kb__confine_level_name(void) { return st.level.level; }
void kb__confine_current(struct kb__confine_level *out) { *out = st.level; }

/* ---- the gate: the one syscall instruction the filter lets open files ----------------------
 * kb__confine_gate(nr, a1..a5) makes system call `nr`; kb__confine_gate_ret is the address right
 * after its syscall instruction, which is what seccomp_data.instruction_pointer holds for it. */
long kb__confine_gate(long nr, long a1, long a2, long a3, long a4, long a5);
extern const char kb__confine_gate_ret[];
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl kb__confine_gate\n.hidden kb__confine_gate\n"
        ".type kb__confine_gate,@function\n"
        "kb__confine_gate:\n"
        "  mov %rdi, %rax\n  mov %rsi, %rdi\n  mov %rdx, %rsi\n  mov %rcx, %rdx\n"
        "  mov %r8, %r10\n  mov %r9, %r8\n  xor %r9d, %r9d\n"
        "  syscall\n"
        ".globl kb__confine_gate_ret\n.hidden kb__confine_gate_ret\n"
        "kb__confine_gate_ret:\n"
        "  ret\n"
        ".size kb__confine_gate, .-kb__confine_gate\n");
#define GATE_ARCH AUDIT_ARCH_X86_64
#else
__asm__(".text\n"
        ".globl kb__confine_gate\n.hidden kb__confine_gate\n"
        ".type kb__confine_gate,%function\n"
        "kb__confine_gate:\n"
        "  mov x8, x0\n  mov x0, x1\n  mov x1, x2\n  mov x2, x3\n  mov x3, x4\n  mov x4, x5\n"
        "  mov x5, xzr\n"
        "  svc #0\n"
        ".globl kb__confine_gate_ret\n.hidden kb__confine_gate_ret\n"
        "kb__confine_gate_ret:\n"
        "  ret\n"
        ".size kb__confine_gate, .-kb__confine_gate\n");
#define GATE_ARCH AUDIT_ARCH_AARCH64
#endif

/* ---- the SIGSYS handler ------------------------------------------------------------------- */
static size_t put(char *buf, size_t at, size_t cap, const char *s) {
  while (*s && at + 1 < cap)
    buf[at++] = *s++;
  return at;
}

static size_t put_num(char *buf, size_t at, size_t cap, long v) {
  char tmp[24];
  int n = 0;
  unsigned long u = v < 0 ? (unsigned long)(-v) : (unsigned long)v;
  do
    tmp[n++] = (char)('0' + u % 10);
  while ((u /= 10) != 0 && n < 22);
  if (v < 0)
    tmp[n++] = '-';
  while (n > 0 && at + 1 < cap)
    buf[at++] = tmp[--n];
  return at;
}

static const char *name_of(int nr) {
  return nr >= 0 && nr < NAMES_MAX && st.names[nr][0] ? st.names[nr] : "unknown";
}

static void say(const char *buf, size_t n) {
  while (n > 0) {
    long w = kb__confine_gate(SYS_write, 2, (long)buf, (long)n, 0, 0);
    if (w <= 0)
      return;
    buf += w;
    n -= (size_t)w;
  }
}

#if defined(__x86_64__)
#define REG_ARG(uc, i)                                                                        \
  ((i) == 0 ? (uc)->uc_mcontext.gregs[REG_RDI]                                               \
   : (i) == 1 ? (uc)->uc_mcontext.gregs[REG_RSI]                                             \
   : (i) == 2 ? (uc)->uc_mcontext.gregs[REG_RDX]                                             \
   : (i) == 3 ? (uc)->uc_mcontext.gregs[REG_R10]                                             \
   : (i) == 4 ? (uc)->uc_mcontext.gregs[REG_R8]                                              \
              : (uc)->uc_mcontext.gregs[REG_R9])
#define SET_RET(uc, v) ((uc)->uc_mcontext.gregs[REG_RAX] = (v))
#else
#define REG_ARG(uc, i) ((long)(uc)->uc_mcontext.regs[(i)])
#define SET_RET(uc, v) ((uc)->uc_mcontext.regs[0] = (unsigned long long)(v))
#endif

static char gate_path[4096]; /* the copy of an open's path that the gate opens */

long kb__confine_send(int fd, const void *p, size_t n) {
  long r = kb__confine_gate(SYS_sendto, fd, (long)p, (long)n, MSG_NOSIGNAL, 0);
  /* a pipe (a harness that starts the sandbox with two pipes, not the runner's socket pair):
   * write(2) from the gate, which the prefix lets through as it does sendto */
  if (r == -ENOTSOCK)
    r = kb__confine_gate(SYS_write, fd, (long)p, (long)n, 0, 0);
  if (r < 0) {
    errno = (int)-r;
    return -1;
  }
  return r;
}

/* Copies the NUL-ended string at `p` into gate_path; 0, or -1 when too long. */
static int copy_path(const char *p) {
  for (size_t i = 0; i < sizeof gate_path; i++) {
    gate_path[i] = p[i];
    if (p[i] == '\0')
      return 0;
  }
  return -1;
}

/* An open the load window lets through: read-only, creating and truncating nothing. */
static int read_only(long flags) {
  return (flags & O_ACCMODE) == O_RDONLY &&
         (flags & (O_CREAT | O_TRUNC | O_APPEND | __O_TMPFILE | O_PATH)) == 0;
}

/* 1 when `p` starts with `prefix` and holds no ".." component (so the prefix is the folder). */
static int under(const char *p, const char *prefix) {
  size_t n = strlen(prefix);
  if (strncmp(p, prefix, n) != 0)
    return 0;
  for (const char *q = p; *q; q++)
    if (q[0] == '.' && q[1] == '.' && (q == p || q[-1] == '/') && (q[2] == '/' || q[2] == '\0'))
      return 0;
  return 1;
}

/* The opens the CUDA driver makes on its own while the sandbox serves (measured on the H200,
 * docs/sandbox.md "Confinement"): its device nodes, read-write (a new descriptor per mapping of
 * device memory), and its procfs parameters, read-only. Neither gives a candidate anything it
 * does not already have through the driver. `a` holds openat's arguments; on a match the path is
 * in gate_path. */
static int driver_open(int nr, const long *a) {
  if (nr != SYS_openat || a[1] == 0)
    return 0;
  long flags = a[2];
  if ((flags & (O_CREAT | O_TRUNC | O_APPEND | __O_TMPFILE | O_PATH)) != 0 ||
      copy_path((const char *)a[1]) != 0)
    return 0;
  if (under(gate_path, "/dev/nvidia"))
    return (flags & O_ACCMODE) == O_RDWR || (flags & O_ACCMODE) == O_RDONLY;
  return under(gate_path, "/proc/driver/nvidia/") && (flags & O_ACCMODE) == O_RDONLY;
}

static void census_note(int nr, long a0, long a1, long a2) {
  int slot = nr >= 0 && nr < NAMES_MAX ? nr : 0;
  int open_like = 0;
#ifdef SYS_open
  if (nr == SYS_open) {
    open_like = 1;
    a1 = a0; /* the path is the first argument of open */
  }
#endif
  if (nr == SYS_openat)
    open_like = 1;
  int bit = load_window ? 2 : 1;
  if (!open_like && (st.seen[slot] & bit))
    return;
  st.seen[slot] |= (unsigned char)bit;
  char buf[600];
  size_t at = put(buf, 0, sizeof buf, "kb-confine census: ");
  at = put(buf, at, sizeof buf, name_of(nr));
  at = put(buf, at, sizeof buf, " (");
  at = put_num(buf, at, sizeof buf, nr);
  at = put(buf, at, sizeof buf, ")");
  if (open_like) {
    at = put(buf, at, sizeof buf, " \"");
    const char *p = (const char *)a1;
    for (int i = 0; p != NULL && p[i] && i < 400 && at + 2 < sizeof buf; i++)
      buf[at++] = p[i];
    at = put(buf, at, sizeof buf, "\" flags ");
    at = put_num(buf, at, sizeof buf, nr == SYS_openat ? a2 : a1);
  }
  at = put(buf, at, sizeof buf, load_window ? " in the load window\n" : "\n");
  say(buf, at);
}

/* Census: the "Threads:" line of /proc/self/status, read through the gate, to fd 2. */
static void census_threads(const char *when) {
  char buf[4096];
  long fd = kb__confine_gate(SYS_openat, AT_FDCWD, (long)"/proc/self/status", O_RDONLY, 0, 0);
  if (fd < 0)
    return;
  long n = kb__confine_gate(SYS_read, fd, (long)buf, sizeof buf - 1, 0, 0);
  kb__confine_gate(SYS_close, fd, 0, 0, 0, 0);
  if (n <= 0)
    return;
  buf[n] = '\0';
  const char *t = strstr(buf, "Threads:");
  if (t == NULL)
    return;
  char line[128];
  size_t at = put(line, 0, sizeof line, "kb-confine census: ");
  at = put(line, at, sizeof line, when);
  at = put(line, at, sizeof line, ", ");
  for (; *t && *t != '\n' && at + 2 < sizeof line; t++)
    line[at++] = *t == '\t' ? ' ' : *t;
  line[at++] = '\n';
  say(line, at);
}

_Noreturn void kb__confine_exit(int code) {
  fflush(NULL);
  if (!st.applied)
    exit(code);
  if (st.census && st.level.seccomp)
    census_threads("at exit");
  _exit(code);
}

static void on_sigsys(int sig, siginfo_t *si, void *ctx) {
  (void)sig;
  ucontext_t *uc = ctx;
  int nr = si->si_syscall;
  long a[6];
  for (int i = 0; i < 6; i++)
    a[i] = REG_ARG(uc, i);
  if (si->si_arch == GATE_ARCH && st.census) {
    census_note(nr, a[0], a[1], a[2]);
    if (nr == SYS_clone3) { /* no safe way to make it from here: glibc falls back to clone */
      SET_RET(uc, -ENOSYS);
      return;
    }
    SET_RET(uc, kb__confine_gate(nr, a[0], a[1], a[2], a[3], a[4]));
    return;
  }
  if (si->si_arch == GATE_ARCH && st.profile == KB__CONFINE_C_CUDA && driver_open(nr, a)) {
    SET_RET(uc, kb__confine_gate(SYS_openat, AT_FDCWD, (long)gate_path, a[2] | O_CLOEXEC, 0, 0));
    return;
  }
  if (si->si_arch == GATE_ARCH && load_window && (st.profile != KB__CONFINE_PYTHON)) {
    long dirfd = -1, path = 0, flags = 0;
    int ok = 0;
    if (nr == SYS_openat) {
      dirfd = a[0], path = a[1], flags = a[2], ok = 1;
    }
#ifdef SYS_open
    if (nr == SYS_open)
      dirfd = AT_FDCWD, path = a[0], flags = a[1], ok = 1;
#endif
    if (ok && read_only(flags) && path != 0 && copy_path((const char *)path) == 0) {
      SET_RET(uc, kb__confine_gate(SYS_openat, dirfd, (long)gate_path, flags | O_CLOEXEC, 0, 0));
      return;
    }
  }
  char buf[96];
  size_t at = put(buf, 0, sizeof buf, "kb-sandbox: blocked system call ");
  at = put(buf, at, sizeof buf, si->si_arch == GATE_ARCH ? name_of(nr) : "unknown");
  at = put(buf, at, sizeof buf, " (");
  at = put_num(buf, at, sizeof buf, nr);
  at = put(buf, at, sizeof buf, ")\n");
  say(buf, at);
  /* the runner reads this status (with the line above) as a blocked call; were exit_group
   * itself refused, SIGSYS is blocked while this handler runs, so a second blocked call makes
   * the kernel reset the action to the default and end the process by SIGSYS
   * (force_sig_seccomp), which the runner reads the same way */
  syscall(SYS_exit_group, KB__SANDBOX_EXIT_BLOCKED);
  for (;;)
    syscall(SYS_personality, 0xffffffffL);
}

/* ---- rlimits -------------------------------------------------------------------------------- */
/* RLIMIT_FSIZE and RLIMIT_NOFILE, soft and hard, on this process; the filter denies raising
 * them again (setrlimit, prlimit64 with a new limit), which matters where it runs as root.
 * RLIMIT_NPROC is left alone: it counts every process and thread of the real user id, the
 * runner's and its other sandboxes' included, so no value bounds this process alone; in the C
 * profiles the filter denies clone and fork outright, and in the Python profile clone without
 * CLONE_THREAD. */
#define FSIZE_MAX_BYTES (256LL << 20) /* no file the sandbox writes is larger */
static int set_limits(char *why, size_t size) {
  /* no core dump, whatever core_pattern says: RLIMIT_CORE of 1 byte is below the smallest core
   * file and is the kernel's own "do not pipe this core" value (do_coredump; 0 does not stop a
   * piped core_pattern such as apport's). On the H200 a confined CUDA sandbox that died by
   * SIGSYS was still dumping to the pipe 10 s later. */
  struct rlimit core = {1, 1};
  struct rlimit had;
  if (getrlimit(RLIMIT_CORE, &had) == 0 && had.rlim_max < 1)
    core = had; /* 0 already: no file cores; it cannot be raised to 1 without privilege */
  if (setrlimit(RLIMIT_CORE, &core) != 0) {
    snprintf(why, size, "cannot set RLIMIT_CORE: %s", strerror(errno));
    return -1;
  }
  struct rlimit cur;
  struct rlimit fs = {(rlim_t)FSIZE_MAX_BYTES, (rlim_t)FSIZE_MAX_BYTES};
  if (getrlimit(RLIMIT_FSIZE, &cur) == 0 && cur.rlim_max != RLIM_INFINITY &&
      cur.rlim_max < fs.rlim_max)
    fs.rlim_cur = fs.rlim_max = cur.rlim_max;
  if (setrlimit(RLIMIT_FSIZE, &fs) != 0) {
    snprintf(why, size, "cannot set RLIMIT_FSIZE: %s", strerror(errno));
    return -1;
  }
  /* RLIMIT_NOFILE bounds descriptor numbers: keep room above the highest one in use (the CUDA
   * driver holds dozens) */
  int high = 2;
  DIR *d = opendir("/proc/self/fd");
  if (d != NULL) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      char *end = NULL;
      long fd = strtol(e->d_name, &end, 10);
      if (end != e->d_name && *end == '\0' && fd > high && fd < 1 << 20)
        high = (int)fd;
    }
    closedir(d);
  }
  rlim_t want = (rlim_t)(high + 1 + 256);
  if (getrlimit(RLIMIT_NOFILE, &cur) == 0 && cur.rlim_max != RLIM_INFINITY &&
      cur.rlim_max < want)
    want = cur.rlim_max;
  struct rlimit nf = {want, want};
  if (setrlimit(RLIMIT_NOFILE, &nf) != 0) {
    snprintf(why, size, "cannot set RLIMIT_NOFILE: %s", strerror(errno));
    return -1;
  }
  return 0;
}

/* ---- Landlock ------------------------------------------------------------------------------- */
static int ll_add(int ruleset, const char *path, uint64_t rights, int abi, int must,
                  char *why, size_t size) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) {
    if (!must)
      return 0;
    snprintf(why, size, "landlock: cannot open \"%s\": %s", path, strerror(errno));
    return -1;
  }
  struct stat sb;
  if (fstat(fd, &sb) == 0 && !S_ISDIR(sb.st_mode))
    rights &= LL_FILE_BITS;
  rights &= ll_fs_rights(abi);
  struct kb__ll_path_beneath pb = {.allowed_access = rights, .parent_fd = fd};
  long r = syscall(__NR_landlock_add_rule, ruleset, 1 /* LANDLOCK_RULE_PATH_BENEATH */, &pb, 0);
  int e = errno;
  close(fd);
  if (r != 0) {
    snprintf(why, size, "landlock: cannot add a rule for \"%s\": %s", path, strerror(e));
    return -1;
  }
  return 0;
}

static int landlock(const struct kb__confine_opts *o, int abi, char *why, size_t size) {
  if (abi > KB_LL_ABI_KNOWN)
    abi = KB_LL_ABI_KNOWN;
  struct kb__ll_ruleset_attr attr = {.handled_access_fs = ll_fs_rights(abi)};
  size_t attr_size = sizeof attr.handled_access_fs;
  if (abi >= 4) {
    attr.handled_access_net = KB_LL_NET_BIND_TCP | KB_LL_NET_CONNECT_TCP;
    attr_size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6) {
    attr.scoped = KB_LL_SCOPE_ABSTRACT_UNIX_SOCKET | KB_LL_SCOPE_SIGNAL;
    attr_size = sizeof attr;
  }
  int rs = (int)syscall(__NR_landlock_create_ruleset, &attr, attr_size, 0);
  if (rs < 0) {
    snprintf(why, size, "landlock: cannot create a ruleset (ABI %d): %s", abi, strerror(errno));
    return -1;
  }
  const uint64_t ro = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |
                      LANDLOCK_ACCESS_FS_READ_DIR;
  const uint64_t dev = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                       LANDLOCK_ACCESS_FS_IOCTL_DEV;
  /* the system's libraries and the toolkit (/usr holds /usr/local/cuda), the loader's cache */
  static const char *const sys_ro[] = {"/usr", "/lib", "/lib64", "/lib32", "/libx32",
                                       "/etc/ld.so.cache", "/opt/nvidia"};
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < sizeof sys_ro / sizeof sys_ro[0]; i++)
    rc = ll_add(rs, sys_ro[i], ro, abi, 0, why, size);
  /* the folders of LD_LIBRARY_PATH: the loader searches them for a candidate's libraries */
  const char *llp = getenv("LD_LIBRARY_PATH");
  while (rc == 0 && llp != NULL && *llp) {
    const char *end = strchr(llp, ':');
    size_t n = end ? (size_t)(end - llp) : strlen(llp);
    char path[4096];
    if (n > 0 && n < sizeof path && llp[0] == '/') {
      memcpy(path, llp, n);
      path[n] = '\0';
      rc = ll_add(rs, path, ro, abi, 0, why, size);
    }
    llp = end ? end + 1 : NULL;
  }
  for (int i = 0; rc == 0 && i < o->n_ro; i++)
    rc = ll_add(rs, o->ro[i], ro, abi, 1, why, size);
  if (rc == 0 && st.census) /* its thread count, read at the end */
    rc = ll_add(rs, "/proc/self/status", LANDLOCK_ACCESS_FS_READ_FILE, abi, 0, why, size);
  if (rc == 0 && o->rw_dir != NULL)
    rc = ll_add(rs, o->rw_dir, ll_fs_rights(abi) & ~(LANDLOCK_ACCESS_FS_EXECUTE |
                                                     LANDLOCK_ACCESS_FS_MAKE_CHAR |
                                                     LANDLOCK_ACCESS_FS_MAKE_BLOCK),
                abi, 1, why, size);
  if (rc == 0 && o->profile == KB__CONFINE_C_CUDA) /* the driver reads its parameters there */
    rc = ll_add(rs, "/proc/driver/nvidia", LANDLOCK_ACCESS_FS_READ_FILE |
                LANDLOCK_ACCESS_FS_READ_DIR, abi, 0, why, size);
  static const char *const dev_rw[] = {"/dev/null", "/dev/zero", "/dev/urandom"};
  for (size_t i = 0; rc == 0 && i < sizeof dev_rw / sizeof dev_rw[0]; i++)
    rc = ll_add(rs, dev_rw[i], dev, abi, 0, why, size);
  /* the GPU's device nodes: /dev/nvidia0, nvidiactl, nvidia-uvm, nvidia-caps/... */
  DIR *d = rc == 0 ? opendir("/dev") : NULL;
  if (d != NULL) {
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
      if (strncmp(e->d_name, "nvidia", 6) != 0)
        continue;
      char path[300];
      snprintf(path, sizeof path, "/dev/%s", e->d_name);
      rc = ll_add(rs, path, dev | LANDLOCK_ACCESS_FS_READ_DIR, abi, 0, why, size);
    }
    closedir(d);
  }
  if (rc == 0 && syscall(__NR_landlock_restrict_self, rs, 0) != 0) {
    snprintf(why, size, "landlock: cannot restrict the process: %s", strerror(errno));
    rc = -1;
  }
  close(rs);
  return rc;
}

/* ---- seccomp -------------------------------------------------------------------------------- */
enum { P_HOST = 1, P_CUDA = 2, P_PY = 4, P_C = P_HOST | P_CUDA, P_ALL = 7 };
struct allowed {
  const char *name;
  int profiles;
};

/* Measured (docs/sandbox.md, "Confinement": the census of each profile). */
static const struct allowed allow[] = {
    /* memory */
    {"brk", P_ALL}, {"mmap", P_ALL}, {"munmap", P_ALL}, {"mprotect", P_ALL}, {"mremap", P_ALL},
    {"madvise", P_ALL}, {"msync", P_ALL}, {"mincore", P_ALL}, {"membarrier", P_ALL},
    {"get_mempolicy", P_CUDA | P_PY}, {"set_mempolicy", P_PY}, {"mbind", P_CUDA | P_PY},
    /* descriptors it holds: the protocol socket, stderr, the device's */
    {"read", P_ALL}, {"write", P_ALL}, {"readv", P_ALL}, {"writev", P_ALL}, {"pread64", P_ALL},
    {"pwrite64", P_ALL}, {"lseek", P_ALL}, {"close", P_ALL}, {"fstat", P_ALL},
    {"newfstatat", P_ALL}, {"statx", P_ALL}, {"fcntl", P_ALL}, {"dup", P_ALL}, {"dup3", P_PY},
    {"dup2", P_PY}, {"poll", P_ALL}, {"ppoll", P_ALL}, {"select", P_ALL}, {"pselect6", P_ALL},
    {"sendto", P_ALL}, {"recvfrom", P_ALL}, {"sendmsg", P_ALL}, {"recvmsg", P_ALL},
    {"getsockname", P_PY}, {"getpeername", P_PY}, {"shutdown", P_PY},
    {"getsockopt", P_PY}, /* Python's socket object on the pair it holds (close at exit) */
    {"ioctl", P_CUDA | P_PY}, {"epoll_create1", P_CUDA | P_PY}, {"epoll_ctl", P_CUDA | P_PY},
    {"epoll_wait", P_CUDA | P_PY}, {"epoll_pwait", P_CUDA | P_PY}, {"eventfd2", P_CUDA | P_PY},
    {"pipe2", P_CUDA | P_PY}, {"pipe", P_PY}, {"timerfd_create", P_CUDA | P_PY},
    {"timerfd_settime", P_CUDA | P_PY}, {"getcpu", P_ALL},
    /* time, identity, scheduling */
    {"clock_gettime", P_ALL}, {"clock_getres", P_ALL}, {"gettimeofday", P_ALL}, {"time", P_ALL},
    {"nanosleep", P_ALL}, {"clock_nanosleep", P_ALL}, {"sched_yield", P_ALL},
    {"sched_getaffinity", P_ALL}, {"sched_setaffinity", P_CUDA | P_PY}, {"sched_getparam", P_ALL},
    {"sched_getscheduler", P_ALL}, {"sched_get_priority_max", P_PY},
    {"sched_get_priority_min", P_PY}, {"getpriority", P_PY}, {"getpid", P_ALL},
    {"gettid", P_ALL}, {"getppid", P_ALL}, {"getuid", P_ALL}, {"geteuid", P_ALL},
    {"getgid", P_ALL}, {"getegid", P_ALL}, {"getpgrp", P_ALL}, {"getrusage", P_ALL},
    {"times", P_ALL}, {"sysinfo", P_ALL}, {"uname", P_ALL}, {"getrandom", P_ALL},
    {"getcwd", P_ALL}, {"getrlimit", P_ALL},
    /* signals and threads of its own */
    {"rt_sigreturn", P_ALL}, {"rt_sigprocmask", P_ALL}, {"sigaltstack", P_ALL},
    {"rt_sigpending", P_ALL}, {"rt_sigtimedwait", P_CUDA | P_PY}, {"restart_syscall", P_ALL},
    {"futex", P_ALL}, {"futex_waitv", P_CUDA | P_PY}, {"set_robust_list", P_ALL},
    {"get_robust_list", P_ALL}, {"rseq", P_ALL}, {"set_tid_address", P_CUDA | P_PY},
    {"exit", P_ALL}, {"exit_group", P_ALL},
    /* files: the Python profile only (Landlock bounds them) */
    {"open", P_PY}, {"openat", P_PY}, {"stat", P_PY}, {"lstat", P_PY}, {"access", P_PY},
    {"faccessat", P_PY}, {"faccessat2", P_PY}, {"readlink", P_PY}, {"readlinkat", P_PY},
    {"getdents64", P_PY}, {"getdents", P_PY}, {"chdir", P_PY}, {"fchdir", P_PY},
    {"mkdir", P_PY}, {"mkdirat", P_PY}, {"unlink", P_PY}, {"unlinkat", P_PY}, {"rmdir", P_PY},
    {"rename", P_PY}, {"renameat", P_PY}, {"renameat2", P_PY}, {"ftruncate", P_PY},
    {"fsync", P_PY}, {"fdatasync", P_PY}, {"flock", P_PY}, {"fstatfs", P_PY}, {"statfs", P_PY},
    {"fadvise64", P_PY}, {"umask", P_PY}, {"close_range", P_PY}, {"memfd_create", P_PY},
};

/* Adds `name` with `action` and the conditions, skipping names this architecture lacks. */
static int rule(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n,
                const struct scmp_arg_cmp *c, char *why, size_t size) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR || nr < 0)
    return 0;
  int r = seccomp_rule_add_array(ctx, action, nr, n, c);
  if (r != 0) {
    snprintf(why, size, "seccomp: cannot add a rule for %s: %s", name, strerror(-r));
    return -1;
  }
  return 0;
}

/* Calls whose first argument is a descriptor through which a candidate could write to the
 * protocol, close it or copy it (profiles C, with kb__confine_opts.proto). */
static const char *const proto_guarded[] = {"write", "writev", "pwrite64", "sendto", "sendmsg",
                                            "close", "dup", "fcntl"};

static int is_guarded(const char *name) {
  for (size_t i = 0; i < sizeof proto_guarded / sizeof proto_guarded[0]; i++)
    if (strcmp(name, proto_guarded[i]) == 0)
      return 1;
  return 0;
}

/* Allows `name` on any descriptor but those of o->proto: below the lowest, above the highest,
 * and each one between them. */
static int rule_not_proto(scmp_filter_ctx ctx, const char *name,
                          const struct kb__confine_opts *o, char *why, size_t size) {
  int lo = o->proto[0], hi = o->proto[0];
  for (int i = 1; i < o->n_proto; i++) {
    lo = o->proto[i] < lo ? o->proto[i] : lo;
    hi = o->proto[i] > hi ? o->proto[i] : hi;
  }
  struct scmp_arg_cmp below = SCMP_A0(SCMP_CMP_LT, (scmp_datum_t)lo);
  struct scmp_arg_cmp above = SCMP_A0(SCMP_CMP_GT, (scmp_datum_t)hi);
  int rc = rule(ctx, SCMP_ACT_ALLOW, name, 1, &below, why, size);
  if (rc == 0)
    rc = rule(ctx, SCMP_ACT_ALLOW, name, 1, &above, why, size);
  for (int fd = lo + 1; rc == 0 && fd < hi; fd++) {
    int held = 0;
    for (int i = 0; i < o->n_proto; i++)
      held |= o->proto[i] == fd;
    struct scmp_arg_cmp eq = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fd);
    if (!held)
      rc = rule(ctx, SCMP_ACT_ALLOW, name, 1, &eq, why, size);
  }
  return rc;
}

/* Is `sig` one whose action a candidate may set in `profile`? Never SIGSYS (the filter's own
 * handler). A handler is candidate code that runs after its call returned, when the evaluator
 * does what raises the signal: a SIGSEGV handler ran the work when the evaluator first touched
 * outputs the call had left inaccessible (mprotect), after the timer stopped
 * (tests/catalogue/host/lazy_fault.c, ok at screen at 3.5 us against the honest 514 us, and
 * tests/tasks/torch_candidates/relu_lazy_fault.c in the PyTorch worker, before 2026-12-07). So
 * on the host a C candidate sets no action at all (the sandbox sets its own before it confines
 * itself, and no alarm can be set there); the PyTorch worker sets the actions of the signals it
 * ignores again after each evaluation, so there the faults' alone are refused (SIGSEGV, SIGBUS,
 * SIGILL, SIGFPE, SIGTRAP: the evaluator's own reads and writes raise those). The CUDA profile
 * keeps the rule before (not SIGSYS): what the driver sets is not measured, and the outputs
 * there are device memory, which the evaluator does not read through host faults. */
static int settable_signal(int profile, int sig) {
  if (sig == SIGSYS || profile == KB__CONFINE_C_HOST)
    return 0;
  if (profile == KB__CONFINE_C_CUDA)
    return 1;
  return sig != SIGSEGV && sig != SIGBUS && sig != SIGILL && sig != SIGFPE && sig != SIGTRAP;
}

/* The rules for rt_sigaction: reading an action (a null new action) always; setting one for
 * the signals settable_signal allows, one rule each, and every real-time signal but in the C
 * host profile. */
static int sigaction_rules(scmp_filter_ctx ctx, int profile, char *why, size_t size) {
  struct scmp_arg_cmp query = SCMP_A1(SCMP_CMP_EQ, 0);
  int rc = rule(ctx, SCMP_ACT_ALLOW, "rt_sigaction", 1, &query, why, size);
  for (int sig = 1; rc == 0 && sig < 32; sig++) {
    struct scmp_arg_cmp eq = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)sig);
    if (settable_signal(profile, sig))
      rc = rule(ctx, SCMP_ACT_ALLOW, "rt_sigaction", 1, &eq, why, size);
  }
  struct scmp_arg_cmp realtime = SCMP_A0(SCMP_CMP_GE, 32);
  if (rc == 0 && profile != KB__CONFINE_C_HOST)
    rc = rule(ctx, SCMP_ACT_ALLOW, "rt_sigaction", 1, &realtime, why, size);
  return rc;
}

/* Kept whole (141 lines): one seccomp program built rule after rule; its order is the filter. */
static int build_filter(const struct kb__confine_opts *o, int census, struct sock_fprog *out,
                        char *why, size_t size) {
  int profile = o->profile;
  int guard = profile != KB__CONFINE_PYTHON && o->n_proto > 0;
  int mask = profile == KB__CONFINE_PYTHON ? P_PY
             : profile == KB__CONFINE_C_CUDA ? P_CUDA
                                             : P_HOST;
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
  if (ctx == NULL) {
    snprintf(why, size, "seccomp: cannot create a filter");
    return -1;
  }
  /* a call of another ABI (x32, i386 through int 0x80) traps too, named "unknown" */
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP) == 0 ? 0 : -1;
  if (rc)
    snprintf(why, size, "seccomp: cannot set the action of other ABIs");
  for (size_t i = 0; rc == 0 && i < sizeof allow / sizeof allow[0]; i++)
    if ((allow[i].profiles & mask) && guard && is_guarded(allow[i].name))
      rc = rule_not_proto(ctx, allow[i].name, o, why, size);
    else if (allow[i].profiles & mask)
      rc = rule(ctx, SCMP_ACT_ALLOW, allow[i].name, 0, NULL, why, size);
  pid_t self = getpid();
  /* signals to itself only (abort, raise); which actions it may set: sigaction_rules */
  struct scmp_arg_cmp to_self = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)self);
  if (rc == 0)
    rc = rule(ctx, SCMP_ACT_ALLOW, "kill", 1, &to_self, why, size);
  if (rc == 0)
    rc = rule(ctx, SCMP_ACT_ALLOW, "tgkill", 1, &to_self, why, size);
  if (rc == 0 && profile == KB__CONFINE_C_HOST)
    rc = rule(ctx, SCMP_ACT_ALLOW, "tkill", 1, &to_self, why, size);
  if (rc == 0)
    rc = sigaction_rules(ctx, profile, why, size);
  /* limits may be read, never set (as root they could be raised again), but the stack's of
   * the process itself: NVRTC raises it before compiling (measured on the H200: cuDNN's
   * runtime-compiled convolution engines under torch.compile, KernelBench level 1 tasks 82, 84
   * and 86, were rejected for prlimit64), and the stack bounds nothing the confinement holds */
  struct scmp_arg_cmp get_only = SCMP_A2(SCMP_CMP_EQ, 0);
  struct scmp_arg_cmp own_stack[] = {SCMP_A0(SCMP_CMP_EQ, 0),
                                     SCMP_A1(SCMP_CMP_EQ, RLIMIT_STACK)};
  if (rc == 0)
    rc = rule(ctx, SCMP_ACT_ALLOW, "prlimit64", 1, &get_only, why, size);
  if (rc == 0)
    rc = rule(ctx, SCMP_ACT_ALLOW, "prlimit64", 2, own_stack, why, size);
  /* prctl: naming threads and mappings only (not PR_SET_DUMPABLE, PR_SET_SECCOMP,
   * PR_SET_PTRACER, PR_SET_NO_NEW_PRIVS, ...) */
  static const long prctl_ok[] = {PR_SET_NAME, PR_GET_NAME, 0x53564d41 /* PR_SET_VMA */,
                                  PR_GET_DUMPABLE, PR_GET_SECCOMP};
  for (size_t i = 0; rc == 0 && i < sizeof prctl_ok / sizeof prctl_ok[0]; i++) {
    struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)prctl_ok[i]);
    rc = rule(ctx, SCMP_ACT_ALLOW, "prctl", 1, &c, why, size);
  }
  if (profile == KB__CONFINE_C_CUDA) {
    /* measured on the H200 (docs/sandbox.md): the driver's legacy stat(2) of its device nodes
     * is metadata only; its unlink/symlink of them (once, when it checks the nodes) fail
     * quietly: Landlock would refuse them anyway. The driver, the runtime and CUPTI start no
     * thread once the sandbox is set up (5 threads when confined, 5 at exit, over a smoke,
     * screen and full evaluation with trace and metrics), so clone and clone3 trap like any
     * other call: a candidate that starts a thread is rejected. */
    if (rc == 0)
      rc = rule(ctx, SCMP_ACT_ALLOW, "stat", 0, NULL, why, size);
    if (rc == 0)
      rc = rule(ctx, SCMP_ACT_ERRNO(EACCES), "unlink", 0, NULL, why, size);
    if (rc == 0)
      rc = rule(ctx, SCMP_ACT_ERRNO(EACCES), "symlink", 0, NULL, why, size);
  }
  if (profile == KB__CONFINE_PYTHON) {
    /* threads, never processes: clone with CLONE_THREAD; clone3's flags sit in memory the
     * filter cannot read, so it fails with ENOSYS and glibc falls back to clone. The C
     * profiles start no thread once set up (measured), so there clone traps. */
    struct scmp_arg_cmp thread = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD);
    if (rc == 0)
      rc = rule(ctx, SCMP_ACT_ALLOW, "clone", 1, &thread, why, size);
    if (rc == 0)
      rc = rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, why, size);
    /* measured on the H200: torch.compile's caches (inductor, Triton) set file times when they
     * reuse an entry; Landlock does not cover times, so the call succeeds without doing anything
     * (errno 0): times are not evidence anything here trusts */
    if (rc == 0)
      rc = rule(ctx, SCMP_ACT_ERRNO(0), "utimensat", 0, NULL, why, size);
    /* measured on the H200: inductor's cache writes an entry and hard-links it into place;
     * Landlock bounds it: a link needs the make-file right on the target folder and, across
     * folders, the refer right on both, which only the working folder has */
    if (rc == 0)
      rc = rule(ctx, SCMP_ACT_ALLOW, "linkat", 0, NULL, why, size);
  }
  (void)census;
  int pfd[2] = {-1, -1};
  if (rc == 0 && pipe2(pfd, O_CLOEXEC) != 0) {
    snprintf(why, size, "seccomp: cannot make a pipe: %s", strerror(errno));
    rc = -1;
  }
  if (rc == 0 && seccomp_export_bpf(ctx, pfd[1]) != 0) {
    snprintf(why, size, "seccomp: cannot export the filter");
    rc = -1;
  }
  seccomp_release(ctx);
  if (pfd[1] >= 0)
    close(pfd[1]);
  if (rc != 0) {
    if (pfd[0] >= 0)
      close(pfd[0]);
    return -1;
  }
  /* the gate prefix (see the gate above): opens, writes and sends made by kb__confine_gate pass
   * (all calls made by it in census mode); the rest goes on to libseccomp's program */
  enum { PREFIX = 12 };
  uint64_t ip = (uint64_t)(uintptr_t)kb__confine_gate_ret;
  size_t cap = 4096;
  struct sock_filter *f = calloc(cap, sizeof *f);
  if (f == NULL) {
    close(pfd[0]);
    snprintf(why, size, "seccomp: out of memory");
    return -1;
  }
  size_t k = PREFIX;
  f[0] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                      offsetof(struct seccomp_data, arch));
  f[1] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, GATE_ARCH, 0, PREFIX - 2);
  f[2] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                      offsetof(struct seccomp_data, instruction_pointer));
  f[3] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)ip, 0, PREFIX - 4);
  f[4] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                      offsetof(struct seccomp_data, instruction_pointer) + 4);
  f[5] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(ip >> 32), 0,
                                      PREFIX - 6);
  if (census)
    f[6] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  else
    f[6] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                        offsetof(struct seccomp_data, nr));
  f[7] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 3, 0);
  f[8] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 2, 0);
  f[9] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sendto, 1, 0);
  /* any other call made from the gate goes on to the allow-list like any call: a candidate
   * that finds the gate (its bytes are in the sandbox's text) gets opens and writes from it,
   * nothing more (before 2026-12-07 this jump landed on the allow below: every call passed) */
  f[10] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, 1, 0, 0);
  f[11] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  ssize_t got;
  while ((got = read(pfd[0], f + k, (cap - k) * sizeof *f)) > 0) {
    k += (size_t)got / sizeof *f;
    if (k == cap) {
      close(pfd[0]);
      free(f);
      snprintf(why, size, "seccomp: the filter is too long");
      return -1;
    }
  }
  close(pfd[0]);
  out->len = (unsigned short)k;
  out->filter = f;
  return 0;
}

static int seccomp_available(void) {
  if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0)
    return 0;
  uint32_t action = SECCOMP_RET_TRAP;
  return syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
}

static void set_level(struct kb__confine_level *l) {
  snprintf(l->level, sizeof l->level, "%s",
           !l->seccomp ? "none" : l->landlock_abi > 0 ? "seccomp+landlock" : "seccomp");
}

static void landlock_note(int e, char *note, size_t size) {
  if (e == ENOSYS)
    snprintf(note, size, "landlock unavailable: kernel too old");
  else if (e == EOPNOTSUPP)
    snprintf(note, size, "landlock unavailable: disabled in this kernel (boot option lsm=)");
  else
    snprintf(note, size, "landlock unavailable: %s", strerror(e));
}

void kb__confine_probe(struct kb__confine_level *out) {
  memset(out, 0, sizeof *out);
  out->seccomp = seccomp_available();
  int e = 0;
  out->landlock_abi = ll_abi(&e);
  if (out->landlock_abi <= 0) {
    out->landlock_abi = 0;
    landlock_note(e, out->note, sizeof out->note);
  }
  if (!out->seccomp) {
    size_t n = strlen(out->note);
    snprintf(out->note + n, sizeof out->note - n, "%sseccomp unavailable: kernel without "
             "seccomp filters", n ? "; " : "");
  }
  set_level(out);
}

int kb__confine_apply(const struct kb__confine_opts *o, struct kb__confine_level *out,
                      char *why, size_t size) {
  if (st.applied) {
    *out = st.level;
    return 0;
  }
  why[0] = '\0';
  struct kb__confine_level probe;
  kb__confine_probe(&probe);
  struct kb__confine_level got = {0};
  snprintf(got.note, sizeof got.note, "%s", probe.note);
  const char *census = getenv("KB_CONFINE_CENSUS");
  st.census = census != NULL && strcmp(census, "1") == 0;
  st.profile = o->profile;
  for (int nr = 0; nr < NAMES_MAX; nr++) {
    char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    if (name != NULL)
      snprintf(st.names[nr], NAME_LEN, "%s", name);
    free(name);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    snprintf(why, size, "cannot set no_new_privs: %s", strerror(errno));
    return -1;
  }
  if (set_limits(why, size) != 0)
    return -1;
  if (probe.landlock_abi > 0) {
    if (landlock(o, probe.landlock_abi, why, size) != 0)
      return -1;
    got.landlock_abi = probe.landlock_abi;
  }
  if (probe.seccomp) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    struct sock_fprog prog = {0};
    if (sigaction(SIGSYS, &sa, NULL) != 0) {
      snprintf(why, size, "cannot install the SIGSYS handler: %s", strerror(errno));
      return -1;
    }
    if (build_filter(o, st.census, &prog, why, size) != 0)
      return -1;
    unsigned flags = o->profile == KB__CONFINE_PYTHON ? SECCOMP_FILTER_FLAG_TSYNC : 0;
    long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
    int e = errno;
    free(prog.filter);
    if (r != 0) {
      snprintf(why, size, "seccomp: cannot load the filter: %s",
               r > 0 ? "another thread is not synchronisable" : strerror(e));
      return -1;
    }
    got.seccomp = 1;
  }
  set_level(&got);
  if (st.census) {
    size_t n = strlen(got.note);
    snprintf(got.note + n, sizeof got.note - n, "%scensus mode: nothing is blocked",
             n ? "; " : "");
  }
  st.level = got;
  st.applied = 1;
  if (st.census && got.seccomp) {
    census_threads("when confined");
  }
  *out = got;
  return 0;
}

/* ---- libkb-confine.so's interface (CONTRACTS.md) ---------------------------------------------- */
KB_CONFINE_API int kb_confine_python(const char *rw_dir, const char *ro_paths, char *why,
                                     size_t size) {
  char local[8];
  if (why == NULL || size == 0) {
    why = local;
    size = sizeof local;
  }
  why[0] = '\0';
  if (st.applied)
    return 0;
  struct kb__confine_opts o = {.profile = KB__CONFINE_PYTHON, .rw_dir = rw_dir};
  char *copy = ro_paths != NULL ? strdup(ro_paths) : NULL;
  if (ro_paths != NULL && copy == NULL) {
    snprintf(why, size, "out of memory");
    return -1;
  }
  char *save = NULL;
  for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p != NULL;
       p = strtok_r(NULL, ":", &save)) {
    if (o.n_ro == KB__CONFINE_RO_MAX) {
      snprintf(why, size, "more than %d read-only paths", KB__CONFINE_RO_MAX);
      free(copy);
      return -1;
    }
    o.ro[o.n_ro++] = p;
  }
  struct kb__confine_level l;
  int rc = kb__confine_apply(&o, &l, why, size);
  free(copy); /* the rules hold descriptors' targets, not these strings */
  return rc;
}

/* Kept whole (45 lines): one filter, its rules in the order a reader checks them. */
KB_CONFINE_API int kb_confine_no_unix_sockets(char *why, size_t size) {
  char local[8];
  if (why == NULL || size == 0) {
    why = local;
    size = sizeof local;
  }
  why[0] = '\0';
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == NULL) {
    snprintf(why, size, "seccomp: cannot create a filter");
    return -1;
  }
  /* a process of another ABI (i386, x32) is ended at its first call: socketcall(2) hides the
   * family in memory the filter cannot read; no compiler of a build is such a program. TSYNC:
   * the interpreter's threads (torch's) get the filter too */
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) == 0 &&
                   seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1) == 0
               ? 0
               : -1;
  if (rc != 0)
    snprintf(why, size, "seccomp: cannot set the filter's attributes");
  /* the kernel reads the family and the type as ints: only the low 32 bits are compared, so a
   * family with high bits set is still AF_UNIX here */
  struct scmp_arg_cmp unix_family = SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffU, AF_UNIX);
  struct scmp_arg_cmp dgram = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xfU, SOCK_DGRAM); /* SOCK_TYPE_MASK */
  if (rc == 0)
    rc = rule(ctx, SCMP_ACT_ERRNO(EACCES), "socket", 1, &unix_family, why, size);
  /* a stream or seqpacket pair is connected for life (connect: EISCONN); a datagram one may
   * connect(2) or sendto(2) any named socket */
  if (rc == 0)
    rc = rule(ctx, SCMP_ACT_ERRNO(EACCES), "socketpair", 1, &dgram, why, size);
  /* io_uring makes sockets and connects them without these system calls (IORING_OP_SOCKET) */
  static const char *const uring[] = {"io_uring_setup", "io_uring_enter", "io_uring_register"};
  for (size_t i = 0; rc == 0 && i < sizeof uring / sizeof *uring; i++)
    rc = rule(ctx, SCMP_ACT_ERRNO(ENOSYS), uring[i], 0, NULL, why, size);
  if (rc == 0) {
    int r = seccomp_load(ctx); /* sets no_new_privs first (libseccomp's default) */
    if (r != 0) {
      snprintf(why, size, "seccomp: cannot load the filter: %s", strerror(-r));
      rc = -1;
    }
  }
  seccomp_release(ctx);
  return rc;
}

/* The code sum's walk: the objects named, their executable segments summed. */
struct code_walk {
  const char *names; /* ':'-separated substrings of an object's path; "[main]" the program */
  uint64_t sum;
  int objects;
};

/* 1 when `path` (dl_iterate_phdr's name: "" for the program) is one of w->names. */
static int code_named(const struct code_walk *w, const char *path) {
  for (const char *n = w->names; *n;) {
    const char *end = strchr(n, ':');
    size_t len = end != NULL ? (size_t)(end - n) : strlen(n);
    char one[128];
    if (len > 0 && len < sizeof one) {
      memcpy(one, n, len);
      one[len] = '\0';
      if (strcmp(one, "[main]") == 0 ? path[0] == '\0' : strstr(path, one) != NULL)
        return 1;
    }
    n += len + (end != NULL);
  }
  return 0;
}

static int code_each(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct code_walk *w = data;
  if (!code_named(w, info->dlpi_name != NULL ? info->dlpi_name : ""))
    return 0;
  w->objects++;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || (ph->p_flags & PF_X) == 0)
      continue;
    const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a over 8-byte words, then the tail */
    size_t n = (size_t)ph->p_filesz, k = 0;
    for (; k + 8 <= n; k += 8) {
      uint64_t v;
      memcpy(&v, p + k, sizeof v);
      h = (h ^ v) * 0x100000001b3ULL;
    }
    for (; k < n; k++)
      h = (h ^ p[k]) * 0x100000001b3ULL;
    w->sum = (w->sum ^ h) * 0x100000001b3ULL;
  }
  return 0;
}

/* A checksum of the code (every executable PT_LOAD segment) of the loaded objects named in
 * `names` (':'-separated substrings of their paths; "[main]" the program itself), into *sum;
 * returns how many objects were summed. For the PyTorch worker, which holds its own clock and
 * C library to them between candidates (kb_sandbox_torch.py, CodeSum). */
KB_CONFINE_API int kb_confine_code_sum(const char *names, uint64_t *sum) {
  struct code_walk w = {.names = names != NULL ? names : "", .sum = 0, .objects = 0};
  dl_iterate_phdr(code_each, &w);
  *sum = w.sum;
  return w.objects;
}

KB_CONFINE_API const char *kb_confine_level(void) { return st.level.level; }
KB_CONFINE_API int kb_confine_landlock_abi(void) {
  if (st.applied)
    return st.level.landlock_abi;
  struct kb__confine_level l; /* not confined yet: what this node offers */
  kb__confine_probe(&l);
  return l.landlock_abi;
}
