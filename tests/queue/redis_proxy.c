/* Fault-injecting relay to redis-server (see redis_proxy.h). */
#define _GNU_SOURCE /* memmem, MAP_ANONYMOUS */
#include "redis_proxy.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kb/fs.h"

enum { MAX_PAIRS = 32 };

struct pair {
  int client;   /* -1 when unused */
  int server;
  int doomed;   /* the next server data is the reply to drop */
};

static int unix_socket(const char *path, int do_listen) {
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof a.sun_path)
    return -1;
  memcpy(a.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  int rc = do_listen ? bind(fd, (struct sockaddr *)&a, sizeof a)
                     : connect(fd, (struct sockaddr *)&a, sizeof a);
  if (rc == 0 && do_listen)
    rc = listen(fd, 64);
  if (rc != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static void close_pair(struct pair *p) {
  if (p->client >= 0)
    close(p->client);
  if (p->server >= 0)
    close(p->server);
  p->client = p->server = -1;
  p->doomed = 0;
}

/* The relay loop of the proxy process. Never returns. */
static void proxy_main(int lfd, const char *upstream, struct kbt_proxy_ctl *ctl) {
  signal(SIGPIPE, SIG_IGN);
  struct pair pairs[MAX_PAIRS];
  for (int i = 0; i < MAX_PAIRS; i++)
    pairs[i].client = pairs[i].server = -1, pairs[i].doomed = 0;
  static char buf[1 << 16];
  for (;;) {
    struct pollfd pf[1 + 2 * MAX_PAIRS];
    int map[1 + 2 * MAX_PAIRS]; /* pair index * 2 + side */
    int n = 0;
    pf[n].fd = lfd;
    pf[n].events = POLLIN;
    map[n++] = -1;
    for (int i = 0; i < MAX_PAIRS; i++) {
      if (pairs[i].client < 0)
        continue;
      pf[n].fd = pairs[i].client;
      pf[n].events = POLLIN;
      map[n++] = 2 * i;
      pf[n].fd = pairs[i].server;
      pf[n].events = POLLIN;
      map[n++] = 2 * i + 1;
    }
    if (poll(pf, (nfds_t)n, -1) < 0) {
      if (errno == EINTR)
        continue;
      _exit(1);
    }
    for (int k = 0; k < n; k++) {
      if (!(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      if (map[k] < 0) {
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
          continue;
        int s = unix_socket(upstream, 0);
        int slot = -1;
        for (int i = 0; i < MAX_PAIRS && slot < 0; i++)
          if (pairs[i].client < 0)
            slot = i;
        if (s < 0 || slot < 0) {
          close(c);
          if (s >= 0)
            close(s);
          continue;
        }
        pairs[slot].client = c;
        pairs[slot].server = s;
        pairs[slot].doomed = 0;
        continue;
      }
      struct pair *p = &pairs[map[k] / 2];
      int from_client = map[k] % 2 == 0;
      int from = from_client ? p->client : p->server;
      if (from < 0 || pf[k].fd != from)
        continue; /* closed earlier in this round */
      ssize_t got = read(from, buf, sizeof buf);
      if (got <= 0) {
        close_pair(p);
        continue;
      }
      if (from_client) {
        int mode = __atomic_load_n(&ctl->mode, __ATOMIC_SEQ_CST);
        if (mode != KBT_PASS && ctl->marker[0] &&
            memmem(buf, (size_t)got, ctl->marker, strlen(ctl->marker))) {
          __atomic_store_n(&ctl->mode, KBT_PASS, __ATOMIC_SEQ_CST);
          __atomic_add_fetch(&ctl->fired, 1, __ATOMIC_SEQ_CST);
          if (mode == KBT_DROP_REQUEST) {
            close_pair(p);
            continue;
          }
          p->doomed = 1;
        }
        if (kb_write_all(p->server, buf, (size_t)got))
          close_pair(p);
      } else if (p->doomed) {
        close_pair(p); /* the reply dies here */
      } else if (kb_write_all(p->client, buf, (size_t)got)) {
        close_pair(p);
      }
    }
  }
}

int kbt_proxy_start(struct kbt_proxy *p, const char *upstream_path, const char *listen_path) {
  memset(p, 0, sizeof *p);
  if (snprintf(p->path, sizeof p->path, "%s", listen_path) >= (int)sizeof p->path)
    return -1;
  snprintf(p->addr, sizeof p->addr, "unix:%s", listen_path);
  void *m = mmap(NULL, sizeof *p->ctl, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    return -1;
  p->ctl = m;
  memset(p->ctl, 0, sizeof *p->ctl);
  unlink(listen_path);
  int lfd = unix_socket(listen_path, 1);
  if (lfd < 0) {
    fprintf(stderr, "proxy: cannot listen on %s: %s\n", listen_path, strerror(errno));
    return -1;
  }
  fflush(stdout);
  fflush(stderr);
  p->pid = fork();
  if (p->pid < 0) {
    close(lfd);
    return -1;
  }
  if (p->pid == 0) {
    proxy_main(lfd, upstream_path, p->ctl);
    _exit(0);
  }
  close(lfd);
  return 0;
}

void kbt_proxy_arm(struct kbt_proxy *p, int mode, const char *marker) {
  __atomic_store_n(&p->ctl->mode, KBT_PASS, __ATOMIC_SEQ_CST);
  snprintf(p->ctl->marker, sizeof p->ctl->marker, "%s", marker);
  __atomic_store_n(&p->ctl->mode, mode, __ATOMIC_SEQ_CST);
}

void kbt_proxy_stop(struct kbt_proxy *p) {
  if (p->pid > 0) {
    kill(p->pid, SIGKILL);
    waitpid(p->pid, NULL, 0);
    p->pid = 0;
  }
  if (p->path[0])
    unlink(p->path);
  if (p->ctl) {
    munmap(p->ctl, sizeof *p->ctl);
    p->ctl = NULL;
  }
}
