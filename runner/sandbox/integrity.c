/* The confined sandbox's own process between candidates (see integrity.h). */
#define _GNU_SOURCE
#include "integrity.h"

#include <errno.h>
#include <fenv.h>
#include <inttypes.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kb/alloc.h"

#define MAX_OBJECTS 256
#define MAX_SEGMENTS (2 * MAX_OBJECTS) /* RELRO and, on the host, code */
#define MAX_MAPS 4096           /* the snapshot's mappings, at most (before any candidate) */
#define MAPS_BYTES (1 << 20)    /* the maps file's buffer at first; it grows as needed */
#define MAPS_BYTES_MAX (64 << 20) /* and no further: a larger file fails the check */
#define MAX_SIGNAL 65 /* signals 1..64 */

struct relro {
  uintptr_t start;
  size_t len;
  uint64_t sum;
  int code;      /* 1: an executable PT_LOAD segment (host); 0: PT_GNU_RELRO */
  char name[96];
};

struct map {
  uintptr_t start, end;
  unsigned long inode;
  char perms[5];
};

/* One signal's disposition as the snapshot found it. */
struct disposition {
  int known;            /* 1: sigaction answered for it */
  void (*handler)(int); /* sa_handler (sa_sigaction shares it) */
  int flags;            /* sa_flags */
};

struct kb__integrity {
  int fd;
  int host;
  dev_t maps_dev;                        /* the maps descriptor's file, as opened */
  ino_t maps_ino;
  struct disposition sig[MAX_SIGNAL];    /* every signal's disposition */
  sigset_t blocked;                      /* the signal mask */
  int n_relro, n_maps;
  struct relro relro[MAX_SEGMENTS];
  struct map *maps; /* MAX_MAPS (owned) */
  char *text;       /* text_cap + 1 bytes (owned) */
  size_t text_cap;  /* bytes of the maps file text can hold */
};

/* A checksum of the bytes at `p`: FNV-1a over the unaligned head and tail bytes, and over
 * the aligned 8-byte words between them in four independent lanes (the CUDA libraries' RELRO
 * segments come to megabytes: FNV-1a byte by byte took some 8 ms a check on an H100, inside
 * the witness's timed request). Not instrumented: the segment holds other objects' globals,
 * whose redzones AddressSanitizer marks unreadable (an ASan build of kb-sandbox reported a read
 * there, and its report's own ioctl was stopped by the filter); plain volatile loads, so no
 * intercepted memcpy reads them either. */
#if defined(__has_attribute)
#if __has_attribute(no_sanitize)
__attribute__((no_sanitize("address", "undefined")))
#endif
#endif
static uint64_t checksum(const unsigned char *p, size_t n) {
  const uint64_t prime = UINT64_C(0x100000001b3);
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  const volatile unsigned char *b = p;
  size_t i = 0;
  for (; i < n && ((uintptr_t)(p + i) & 7) != 0; i++)
    h = (h ^ b[i]) * prime;
  uint64_t lane[4] = {h, h ^ 1, h ^ 2, h ^ 3};
  const volatile uint64_t *w = (const volatile uint64_t *)(const void *)(p + i);
  size_t words = (n - i) / 8;
  size_t k = 0;
  for (; k + 4 <= words; k += 4)
    for (int j = 0; j < 4; j++)
      lane[j] = (lane[j] ^ w[k + (size_t)j]) * prime;
  for (; k < words; k++)
    lane[0] = (lane[0] ^ w[k]) * prime;
  i += words * 8;
  h = lane[0] ^ (lane[1] * 3) ^ (lane[2] * 5) ^ (lane[3] * 7);
  for (; i < n; i++)
    h = (h ^ b[i]) * prime;
  return h;
}

struct walk {
  struct kb__integrity *g;
  int check;      /* 0: record; 1: compare with the record */
  char *why;
  size_t size;
  int changed;
};

/* dl_iterate_phdr's callback: each object's PT_GNU_RELRO segment and, on the host, its
 * executable PT_LOAD segments (its code, the vDSO's included), recorded or compared. */
static int each_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct walk *w = data;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    int code = ph->p_type == PT_LOAD && (ph->p_flags & PF_X) != 0;
    if ((ph->p_type != PT_GNU_RELRO && !(code && w->g->host)) || ph->p_memsz == 0)
      continue;
    uintptr_t start = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr;
    size_t len = (size_t)ph->p_filesz; /* code: what the file maps; RELRO: p_memsz */
    if (!code)
      len = (size_t)ph->p_memsz;
    struct kb__integrity *g = w->g;
    if (!w->check) {
      if (g->n_relro >= MAX_SEGMENTS)
        return 0;
      struct relro *r = &g->relro[g->n_relro++];
      r->start = start;
      r->len = len;
      r->code = code;
      r->sum = checksum((const unsigned char *)start, len);
      snprintf(r->name, sizeof r->name, "%s",
               info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "the sandbox");
      continue; /* the object's next segment: its code comes before its RELRO */
    }
    for (int k = 0; k < g->n_relro; k++) {
      const struct relro *r = &g->relro[k];
      if (r->start != start || r->len != len || r->code != code)
        continue;
      if (checksum((const unsigned char *)start, len) != r->sum && !w->changed) {
        if (code)
          snprintf(w->why, w->size, "the code of %s (%zu bytes at %#" PRIxPTR ") changed",
                   r->name, len, start);
        else
          snprintf(w->why, w->size, "the relocated read-only data of %s (%zu bytes at %#"
                   PRIxPTR ": its function table) changed", r->name, len, start);
        w->changed = 1;
      }
    }
  }
  return 0;
}

/* 1 for a mapping that is not the code or data of a loaded object: the kernel's own pages
 * ([vdso], [vsyscall]) and what a driver maps and unmaps at will, devices (/dev/nvidia0,
 * /dev/nvidia-uvm: the CUDA driver maps device memory there with the protections each
 * allocation asks, at addresses an earlier allocation of the same device file may have held)
 * and memory files (memfd, anon_inode). */
static int driver_mapping(const char *path) {
  return strcmp(path, "[vdso]") == 0 || strcmp(path, "[vsyscall]") == 0 ||
         strncmp(path, "/dev/", 5) == 0 || strncmp(path, "/memfd:", 7) == 0 ||
         strncmp(path, "anon_inode:", 11) == 0;
}

/* The whole maps file into g->text (NUL-terminated), the buffer grown as needed up to
 * MAPS_BYTES_MAX. Every mapping is read: the check once read at most 1 MiB and 4,096 mappings,
 * and a candidate that made 5,000 one-page mappings below an executable page of its own left
 * that page past the last one it read (tests/runner/candidates/hides_mapping.c, ok before
 * 2026-12-07). Returns 0, or -1 (`err`: the file cannot be read, or is larger than the cap). */
static int read_maps_text(struct kb__integrity *g, struct kb_error *err) {
  size_t got = 0;
  for (;;) {
    if (got == g->text_cap) {
      if (g->text_cap >= MAPS_BYTES_MAX) {
        kb_error_set(err, KB_EIO, "/proc/self/maps is larger than %d MiB: more mappings than "
                     "the check reads", MAPS_BYTES_MAX >> 20);
        return -1;
      }
      char *t = kb_reallocarray(g->text, 2 * g->text_cap + 1, 1);
      if (t == NULL) {
        kb_error_set(err, KB_ENOMEM, "out of memory");
        return -1;
      }
      g->text = t;
      g->text_cap *= 2;
    }
    ssize_t k = pread(g->fd, g->text + got, g->text_cap - got, (off_t)got);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0) {
      kb_error_set(err, KB_EIO, "/proc/self/maps cannot be read: %s", strerror(errno));
      return -1;
    }
    if (k == 0)
      break;
    got += (size_t)k;
  }
  g->text[got] = '\0';
  return 0;
}

/* The next line of the maps text at *at into `m`, *at moved past it. Returns 1 for a mapping
 * the checks count, 0 for one they leave out (driver_mapping) or a line that does not parse,
 * -1 at the end of the text. */
static int next_map(char **at, struct map *m) {
  char *line = *at;
  if (line == NULL || *line == '\0')
    return -1;
  char *nl = strchr(line, '\n');
  if (nl != NULL)
    *nl = '\0';
  *at = nl != NULL ? nl + 1 : NULL;
  unsigned long long a = 0, b = 0, off = 0;
  char dev[32];
  int path_at = 0;
  if (sscanf(line, "%llx-%llx %4s %llx %31s %lu %n", &a, &b, m->perms, &off, dev, &m->inode,
             &path_at) < 6)
    return 0;
  m->start = (uintptr_t)a;
  m->end = (uintptr_t)b;
  return !driver_mapping(path_at > 0 ? line + path_at : "");
}

/* The maps file parsed into `out` (MAX_MAPS): the snapshot, before any candidate. Returns the
 * count, or -1 (`err`, also when the sandbox's own mappings are more than MAX_MAPS). */
static int read_maps(struct kb__integrity *g, struct map *out, struct kb_error *err) {
  if (read_maps_text(g, err) != 0)
    return -1;
  int n = 0, r;
  struct map m;
  for (char *at = g->text; (r = next_map(&at, &m)) >= 0;) {
    if (r == 0)
      continue;
    if (n == MAX_MAPS) {
      kb_error_set(err, KB_EIO, "the sandbox holds more than %d mappings", MAX_MAPS);
      return -1;
    }
    out[n++] = m;
  }
  return n;
}

int kb__integrity_new(int maps_fd, int host, struct kb__integrity **out, struct kb_error *err) {
  *out = NULL;
  struct kb__integrity *g = kb_calloc(1, sizeof *g);
  if (g != NULL) {
    g->maps = kb_calloc(MAX_MAPS, sizeof *g->maps);
    g->text = kb_malloc(MAPS_BYTES + 1);
    g->text_cap = MAPS_BYTES;
  }
  if (g == NULL || g->maps == NULL || g->text == NULL) {
    if (g != NULL)
      g->fd = -1;
    kb__integrity_free(g);
    if (maps_fd >= 0)
      close(maps_fd);
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  }
  g->fd = maps_fd;
  g->host = host;
  struct stat sb;
  if (maps_fd >= 0 && fstat(maps_fd, &sb) == 0) {
    g->maps_dev = sb.st_dev;
    g->maps_ino = sb.st_ino;
  }
  *out = g;
  return KB_OK;
}

/* Every signal's disposition (but SIGSYS's, which the filter keeps: asking is refused too)
 * and the signal mask, recorded (`check` 0) or compared. Returns 1 at the first change (`why`),
 * else 0. */
static int signals(struct kb__integrity *g, int check, char *why, size_t size) {
  for (int sig = 1; sig < MAX_SIGNAL; sig++) {
    struct sigaction sa;
    if (sig == SIGSYS || sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &sa) != 0)
      continue;
    struct disposition *d = &g->sig[sig];
    if (!check) {
      d->known = 1;
      d->handler = sa.sa_handler;
      d->flags = sa.sa_flags;
    } else if (d->known && (d->handler != sa.sa_handler || d->flags != sa.sa_flags)) {
      snprintf(why, size, "the action of signal %d (%s) changed", sig, strsignal(sig));
      return 1;
    }
  }
  sigset_t now;
  if (sigprocmask(SIG_BLOCK, NULL, check ? &now : &g->blocked) != 0 || !check)
    return 0;
  for (int sig = 1; sig < MAX_SIGNAL; sig++)
    if (sig != SIGKILL && sig != SIGSTOP && sigismember(&now, sig) != sigismember(&g->blocked, sig)) {
      snprintf(why, size, "the signal mask changed (signal %d, %s)", sig, strsignal(sig));
      return 1;
    }
  return 0;
}

int kb__integrity_snapshot(struct kb__integrity *g, struct kb_error *err) {
  signals(g, 0, NULL, 0);
  g->n_relro = 0;
  struct walk w = {.g = g};
  dl_iterate_phdr(each_object, &w);
  int n = read_maps(g, g->maps, err);
  if (n < 0)
    return err->code;
  g->n_maps = n;
  return KB_OK;
}

int kb__integrity_check(struct kb__integrity *g, char *why, size_t size, struct kb_error *err) {
  struct walk w = {.g = g, .check = 1, .why = why, .size = size};
  dl_iterate_phdr(each_object, &w);
  if (w.changed)
    return 1;
  if (signals(g, 1, why, size))
    return 1;
  struct stat sb;
  if (g->fd >= 0 && (fstat(g->fd, &sb) != 0 || sb.st_dev != g->maps_dev ||
                     sb.st_ino != g->maps_ino)) {
    snprintf(why, size, "its descriptor of /proc/self/maps (%d) was closed or replaced", g->fd);
    return 1;
  }
  if (read_maps_text(g, err) != 0)
    return -1;
  int changed = 0, r;
  struct map now;
  for (char *at = g->text; changed == 0 && (r = next_map(&at, &now)) >= 0;) {
    const struct map *m = &now;
    if (r == 0)
      continue;
    if (m->inode == 0) { /* anonymous: code a candidate wrote for itself, on the host */
      if (g->host && strchr(m->perms, 'x') != NULL) {
        snprintf(why, size, "an executable mapping that no file backs (%#" PRIxPTR "-%#" PRIxPTR
                 " %s) is left in the process", m->start, m->end, m->perms);
        changed = 1;
      }
      continue;
    }
    for (int k = 0; k < g->n_maps; k++) {
      const struct map *s = &g->maps[k];
      /* within a mapping of the snapshot (an mprotect of part of one splits it) */
      if (s->inode == m->inode && s->start <= m->start && m->end <= s->end &&
          strcmp(s->perms, m->perms) != 0) {
        snprintf(why, size, "the protection of the sandbox's own mapping %#" PRIxPTR "-%#" PRIxPTR
                 " changed from %s to %s", m->start, m->end, s->perms, m->perms);
        changed = 1;
        break;
      }
    }
  }
  return changed;
}

struct object_sum {
  uintptr_t fn;  /* an address inside the object's code */
  uint64_t sum;  /* its code's and RELRO's checksums, combined */
  int found;
};

/* dl_iterate_phdr's callback: the object whose executable segment holds o->fn, summed. */
static int sum_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct object_sum *o = data;
  int holds = 0;
  for (int i = 0; i < info->dlpi_phnum && !holds; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t start = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr;
    holds = ph->p_type == PT_LOAD && (ph->p_flags & PF_X) != 0 && start <= o->fn &&
            o->fn < start + (uintptr_t)ph->p_memsz;
  }
  if (!holds)
    return 0;
  uint64_t sum = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    int code = ph->p_type == PT_LOAD && (ph->p_flags & PF_X) != 0;
    if ((!code && ph->p_type != PT_GNU_RELRO) || ph->p_memsz == 0)
      continue;
    const unsigned char *start = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
    sum = sum * 0x100000001b3ULL ^ checksum(start, code ? ph->p_filesz : ph->p_memsz);
  }
  o->sum = sum;
  o->found = 1;
  return 1;
}

int kb__integrity_object_sum(const void *fn, uint64_t *sum) {
  struct object_sum o = {.fn = (uintptr_t)fn};
  dl_iterate_phdr(sum_object, &o);
  *sum = o.sum;
  return o.found ? 0 : -1;
}

/* dl_iterate_phdr's callback: 1 (stop) at the object named *data. */
static int named(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  return info->dlpi_name != NULL && strcmp(info->dlpi_name, (const char *)data) == 0;
}

int kb__integrity_loaded(const char *path) {
  return path != NULL && *path && dl_iterate_phdr(named, (void *)path) != 0;
}

void kb__integrity_free(struct kb__integrity *g) {
  if (g == NULL)
    return;
  if (g->fd >= 0)
    close(g->fd);
  kb_free(g->maps);
  kb_free(g->text);
  kb_free(g);
}

/* The environment kb__fpenv_save recorded. */
static struct {
  int saved;
  fenv_t env;
#if defined(__x86_64__)
  unsigned int mxcsr;   /* SSE control and status; bits 0-5 are the sticky flags */
  unsigned short x87cw; /* x87 control word */
#endif
} fp;

void kb__fpenv_save(void) {
  if (fegetenv(&fp.env) != 0)
    return;
#if defined(__x86_64__)
  __asm__ volatile("stmxcsr %0" : "=m"(fp.mxcsr));
  __asm__ volatile("fnstcw %0" : "=m"(fp.x87cw));
#endif
  fp.saved = 1;
}

void kb__fpenv_restore(void) {
  if (!fp.saved)
    return;
#if defined(__x86_64__)
  unsigned int mxcsr;
  unsigned short cw;
  __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
  __asm__ volatile("fnstcw %0" : "=m"(cw));
  if (((mxcsr ^ fp.mxcsr) & ~0x3fu) == 0 && cw == fp.x87cw)
    return;
  __asm__ volatile("fnclex"); /* no pending x87 exception raised by the load below */
#endif
  fesetenv(&fp.env);
}
