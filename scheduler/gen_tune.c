/* The tune generator (see gen_tune.h). */
#include "gen_tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/catalog.h"
#include "kb/error.h"
#include "kb/keys.h"
#include "kb/log.h"
#include "kb/queue.h"
#include "kb/redis.h"
#include "gen_rank.h"

#define RANDOM_TRIES 64
#define WALK_MAX (1 << 20) /* spaces up to this size are walked when random tries fail */
#define PARENTS 4          /* best knob sets that breed */

/* ---- Parsing ------------------------------------------------------------------------------- */

static int ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

static const char *skip_sp(const char *p) {
  while (*p == ' ' || *p == '\t')
    p++;
  return p;
}

/* Copies the word at `p` (up to blank or line end) into `out`; returns its end. */
static const char *word(const char *p, char *out, size_t size, size_t *len) {
  size_t n = 0;
  while (p[n] && p[n] != ' ' && p[n] != '\t' && p[n] != '\n' && p[n] != '\r')
    n++;
  *len = n;
  if (n < size) {
    memcpy(out, p, n);
    out[n] = '\0';
  } else if (size > 0) {
    out[0] = '\0';
  }
  return p + n;
}

static int name_valid(const char *s) {
  if (!ident_start(s[0]))
    return 0;
  for (const char *p = s; *p; p++)
    if (!ident_char(*p))
      return 0;
  return 1;
}

/* An integer (optionally signed, decimal or 0x hex, with an optional u/l suffix) or an
 * identifier: something -DNAME=value can carry without shell or compiler surprises. */
static int value_valid(const char *s) {
  if (name_valid(s))
    return 1;
  const char *p = s;
  if (*p == '-' || *p == '+')
    p++;
  if (*p < '0' || *p > '9')
    return 0;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
    p += 2;
    if (!*p)
      return 0;
    while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F'))
      p++;
  } else {
    while (*p >= '0' && *p <= '9')
      p++;
  }
  while (*p == 'u' || *p == 'U' || *p == 'l' || *p == 'L')
    p++;
  return *p == '\0';
}

/* The next line after `p` that is not blank, and its number. NULL at the end. */
static const char *next_line(const char *p, int *lineno) {
  for (;;) {
    const char *nl = strchr(p, '\n');
    if (nl == NULL)
      return NULL;
    p = nl + 1;
    (*lineno)++;
    const char *q = skip_sp(p);
    if (*q != '\n' && *q != '\r' && *q != '\0')
      return p;
    if (*q == '\0')
      return NULL;
  }
}

/* Matches "#<sp>directive<sp>NAME" at `p`; returns what follows NAME or NULL. */
static const char *directive(const char *p, const char *dir, const char *name) {
  p = skip_sp(p);
  if (*p != '#')
    return NULL;
  p = skip_sp(p + 1);
  size_t n = strlen(dir);
  if (strncmp(p, dir, n) != 0 || (p[n] != ' ' && p[n] != '\t'))
    return NULL;
  p = skip_sp(p + n);
  size_t m = strlen(name);
  if (strncmp(p, name, m) != 0 || ident_char(p[m]))
    return NULL;
  return p + m;
}

int kb__tune_parse(const char *source, struct kb_knob_space *s, struct kb_error *err) {
  memset(s, 0, sizeof *s);
  const char *line = source;
  int lineno = 1;
  while (line && *line) {
    const char *p = skip_sp(line);
    int this_line = lineno;
    if (strncmp(p, "//", 2) == 0 && strncmp(skip_sp(p + 2), "kb:param", 8) == 0) {
      p = skip_sp(p + 2) + 8;
      if (*p != ' ' && *p != '\t')
        return kb_error_set(err, KB_EPARSE, "line %d: \"kb:param\" needs a name and values",
                            this_line);
      if (s->n == KB_TUNE_MAX_KNOBS)
        return kb_error_set(err, KB_EPARSE, "line %d: more than %d knobs", this_line,
                            KB_TUNE_MAX_KNOBS);
      struct kb_knob *k = &s->knobs[s->n];
      memset(k, 0, sizeof *k);
      size_t len = 0;
      p = word(skip_sp(p), k->name, sizeof k->name, &len);
      if (len == 0 || len >= sizeof k->name || !name_valid(k->name))
        return kb_error_set(err, KB_EPARSE, "line %d: knob name must be a C identifier",
                            this_line);
      for (int j = 0; j < s->n; j++)
        if (strcmp(s->knobs[j].name, k->name) == 0)
          return kb_error_set(err, KB_EPARSE, "line %d: knob %s is declared twice", this_line,
                              k->name);
      for (;;) {
        p = skip_sp(p);
        if (*p == '\n' || *p == '\r' || *p == '\0')
          break;
        if (k->n_values == KB_TUNE_MAX_VALUES)
          return kb_error_set(err, KB_EPARSE, "line %d: knob %s has more than %d values",
                              this_line, k->name, KB_TUNE_MAX_VALUES);
        char *v = k->values[k->n_values];
        p = word(p, v, KB_TUNE_VALUE_MAX, &len);
        if (len >= KB_TUNE_VALUE_MAX || !value_valid(v))
          return kb_error_set(err, KB_EPARSE,
                              "line %d: knob %s: values must be integers or identifiers of at "
                              "most %d characters",
                              this_line, k->name, KB_TUNE_VALUE_MAX - 1);
        for (int j = 0; j < k->n_values; j++)
          if (strcmp(k->values[j], v) == 0)
            return kb_error_set(err, KB_EPARSE, "line %d: knob %s lists %s twice", this_line,
                                k->name, v);
        k->n_values++;
      }
      if (k->n_values == 0)
        return kb_error_set(err, KB_EPARSE, "line %d: knob %s has no values", this_line,
                            k->name);
      const char *l2 = next_line(line, &lineno);
      if (l2 == NULL || directive(l2, "ifndef", k->name) == NULL)
        return kb_error_set(err, KB_EPARSE,
                            "line %d: \"kb:param %s\" must be followed by \"#ifndef %s\"",
                            this_line, k->name, k->name);
      const char *l3 = next_line(l2, &lineno);
      const char *val = l3 ? directive(l3, "define", k->name) : NULL;
      if (val == NULL)
        return kb_error_set(err, KB_EPARSE,
                            "line %d: \"#ifndef %s\" must be followed by \"#define %s value\"",
                            lineno, k->name, k->name);
      char def[KB_TUNE_VALUE_MAX];
      word(skip_sp(val), def, sizeof def, &len);
      k->def = -1;
      for (int j = 0; j < k->n_values; j++)
        if (strcmp(k->values[j], def) == 0)
          k->def = j;
      s->n++;
      line = l3;
    }
    const char *nl = strchr(line, '\n');
    line = nl ? nl + 1 : NULL;
    lineno++;
  }
  return KB_OK;
}

int64_t kb__tune_space_size(const struct kb_knob_space *s) {
  int64_t n = 1;
  for (int i = 0; i < s->n; i++) {
    if (n > INT64_MAX / s->knobs[i].n_values)
      return INT64_MAX;
    n *= s->knobs[i].n_values;
  }
  return n;
}

int kb__tune_knob_string(const struct kb_knob_space *s, const int *idx, char *out, size_t size) {
  size_t used = 0;
  out[0] = '\0';
  for (int i = 0; i < s->n; i++) {
    int n = snprintf(out + used, size - used, "%s-D%s=%s", i ? " " : "", s->knobs[i].name,
                     s->knobs[i].values[idx[i]]);
    if (n < 0 || (size_t)n >= size - used)
      return KB_EINVAL;
    used += (size_t)n;
  }
  return KB_OK;
}

/* ---- The generator ------------------------------------------------------------------------- */

struct base {
  char id[KB_CAND_ID_LEN + 1];
  struct kb_candidate cand;   /* the base's source, name, flags (owned) */
  struct kb_knob_space space;
  int64_t size;
  char key[256];              /* redis hash of proposals */
  char **seen;                /* knob strings proposed (owned) */
  char (*seen_ids)[KB_CAND_ID_LEN + 1]; /* their candidate ids ("" for the default) */
  int n_seen, cap_seen;
  int exhausted;
};

struct task_state {
  char task[KB_ID_MAX];
  int empty_at;               /* population size when propose last found nothing; -1 */
};

struct kb_tune {
  struct kb_queue *q;
  unsigned rng;
  struct base *bases;
  int n_bases, cap_bases;
  char (*checked)[KB_CAND_ID_LEN + 1]; /* members already looked at */
  int n_checked, cap_checked;
  struct task_state *ts;
  int n_ts, cap_ts;
};

static unsigned rnd(struct kb_tune *t) {
  t->rng ^= t->rng << 13;
  t->rng ^= t->rng >> 17;
  t->rng ^= t->rng << 5;
  return t->rng;
}

int kb__tune_new(struct kb_queue *q, unsigned seed, struct kb_tune **out, struct kb_error *err) {
  struct kb_tune *t = kb_calloc(1, sizeof *t);
  if (t == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  t->q = q;
  t->rng = seed ? seed : 0x9e3779b9u;
  *out = t;
  return KB_OK;
}

static void base_release(struct base *b) {
  kb_candidate_release(&b->cand);
  for (int i = 0; i < b->n_seen; i++)
    kb_free(b->seen[i]);
  kb_free(b->seen);
  kb_free(b->seen_ids);
}

void kb__tune_free(struct kb_tune *t) {
  if (t == NULL)
    return;
  for (int i = 0; i < t->n_bases; i++)
    base_release(&t->bases[i]);
  kb_free(t->bases);
  kb_free(t->checked);
  kb_free(t->ts);
  kb_free(t);
}

/* Grows array `*arr` of `*cap` elements of `size` bytes to hold `n + 1`. */
static int grow(void **arr, int *cap, int n, size_t size) {
  if (n < *cap)
    return KB_OK;
  int want = *cap ? *cap * 2 : 8;
  void *p = kb_reallocarray(*arr, (size_t)want, size);
  if (p == NULL)
    return KB_ENOMEM;
  *arr = p;
  *cap = want;
  return KB_OK;
}

static struct task_state *task_state(struct kb_tune *t, const char *task) {
  for (int i = 0; i < t->n_ts; i++)
    if (strcmp(t->ts[i].task, task) == 0)
      return &t->ts[i];
  if (grow((void **)&t->ts, &t->cap_ts, t->n_ts, sizeof *t->ts))
    return NULL;
  struct task_state *s = &t->ts[t->n_ts++];
  snprintf(s->task, sizeof s->task, "%s", task);
  s->empty_at = -1;
  return s;
}

int kb__tune_exhausted(const struct kb_tune *t, const struct kb_task_pop *pop) {
  for (int i = 0; i < t->n_ts; i++)
    if (strcmp(t->ts[i].task, pop->task) == 0)
      return t->ts[i].empty_at >= 0 && t->ts[i].empty_at == pop->n;
  return 0;
}

static int seen_index(const struct base *b, const char *knobs) {
  for (int i = 0; i < b->n_seen; i++)
    if (strcmp(b->seen[i], knobs) == 0)
      return i;
  return -1;
}

static int add_seen(struct base *b, const char *knobs, const char *id) {
  if (seen_index(b, knobs) >= 0)
    return KB_OK;
  int cap = b->cap_seen;
  if (grow((void **)&b->seen, &cap, b->n_seen, sizeof *b->seen))
    return KB_ENOMEM;
  if (cap != b->cap_seen) {
    void *p = kb_reallocarray(b->seen_ids, (size_t)cap, sizeof *b->seen_ids);
    if (p == NULL)
      return KB_ENOMEM;
    b->seen_ids = p;
    b->cap_seen = cap;
  }
  b->seen[b->n_seen] = kb_strdup(knobs);
  if (b->seen[b->n_seen] == NULL)
    return KB_ENOMEM;
  snprintf(b->seen_ids[b->n_seen], sizeof b->seen_ids[0], "%s", id);
  b->n_seen++;
  return KB_OK;
}

/* Parses a knob string we wrote back into value indices; 0 on success. */
static int knob_indices(const struct kb_knob_space *s, const char *str, int *idx) {
  for (int i = 0; i < s->n; i++) {
    char want[KB_ID_MAX + 4];
    snprintf(want, sizeof want, "-D%s=", s->knobs[i].name);
    const char *p = strstr(str, want);
    if (p == NULL)
      return -1;
    p += strlen(want);
    size_t n = strcspn(p, " ");
    idx[i] = -1;
    for (int j = 0; j < s->knobs[i].n_values; j++)
      if (strlen(s->knobs[i].values[j]) == n && strncmp(s->knobs[i].values[j], p, n) == 0)
        idx[i] = j;
    if (idx[i] < 0)
      return -1;
  }
  return 0;
}

/* Loads what earlier incarnations proposed for `b`. */
static int load_seen(struct kb_tune *t, struct base *b, struct kb_error *err) {
  redisReply *rep = NULL;
  int rc = kb_redis_commandf(t->q->redis, &rep, err, "HGETALL %s", b->key);
  if (rc)
    return rc;
  for (size_t i = 0; rc == KB_OK && rep->type == REDIS_REPLY_ARRAY && i + 1 < rep->elements;
       i += 2)
    if (add_seen(b, rep->element[i]->str, rep->element[i + 1]->str))
      rc = kb_error_set(err, KB_ENOMEM, "out of memory");
  freeReplyObject(rep);
  return rc;
}

static int was_checked(const struct kb_tune *t, const char *id) {
  for (int i = 0; i < t->n_checked; i++)
    if (strcmp(t->checked[i], id) == 0)
      return 1;
  return 0;
}

/* Looks at members of `pop` not seen before and makes bases of those with knobs. */
static int find_bases(struct kb_tune *t, const struct kb_task_pop *pop, struct kb_error *err) {
  for (int i = 0; i < pop->n; i++) {
    const struct kb_member *m = &pop->members[i];
    if (was_checked(t, m->id))
      continue;
    if (grow((void **)&t->checked, &t->cap_checked, t->n_checked, sizeof *t->checked))
      return kb_error_set(err, KB_ENOMEM, "out of memory");
    snprintf(t->checked[t->n_checked++], sizeof t->checked[0], "%s", m->id);
    if (strcmp(m->generator, "tune") == 0)
      continue;
    struct kb_candidate c;
    struct kb_error lookup = {0};
    int rc = kb_catalog_get_candidate(t->q, m->id, &c, &lookup);
    if (rc == KB_ENOTFOUND || rc == KB_EPARSE) {
      kb_warn("tune: %s", lookup.msg);
      continue;
    }
    if (rc)
      return kb_error_set(err, rc, "%s", lookup.msg);
    if (c.format != KB_FORMAT_NATIVE) { /* knobs are -D flags of a native build */
      kb_info("tune: %s/%s is a %s candidate; not tuned", pop->task, c.name,
              kb_cand_format_name(c.format));
      kb_candidate_release(&c);
      continue;
    }
    struct kb_knob_space space;
    struct kb_error perr = {0};
    if (c.knobs[0] != '\0' || kb__tune_parse(c.source, &space, &perr) || space.n == 0) {
      if (perr.code)
        kb_warn("tune: %s/%s: %s; not tuned", pop->task, c.name, perr.msg);
      kb_candidate_release(&c);
      continue;
    }
    if (grow((void **)&t->bases, &t->cap_bases, t->n_bases, sizeof *t->bases)) {
      kb_candidate_release(&c);
      return kb_error_set(err, KB_ENOMEM, "out of memory");
    }
    struct base *b = &t->bases[t->n_bases++];
    memset(b, 0, sizeof *b);
    snprintf(b->id, sizeof b->id, "%s", m->id);
    b->cand = c;
    b->space = space;
    b->size = kb__tune_space_size(&space);
    char suffix[160];
    snprintf(suffix, sizeof suffix, KB_KEY_GEN_TUNE_FMT, pop->task, m->id);
    kb_queue_key(t->q, b->key, sizeof b->key, suffix);
    rc = load_seen(t, b, err);
    if (rc)
      return rc;
    int idx[KB_TUNE_MAX_KNOBS];
    int have_default = 1;
    for (int k = 0; k < space.n; k++) {
      idx[k] = space.knobs[k].def;
      have_default &= idx[k] >= 0;
    }
    char knobs[1024];
    if (have_default && kb__tune_knob_string(&space, idx, knobs, sizeof knobs) == KB_OK &&
        add_seen(b, knobs, b->id))
      return kb_error_set(err, KB_ENOMEM, "out of memory");
    kb_info("tune: %s/%s has %d knob%s, %lld knob sets, %d proposed so far", pop->task, c.name,
            space.n, space.n == 1 ? "" : "s", (long long)b->size, b->n_seen);
  }
  return KB_OK;
}

/* Fills `p` with the candidate for knob set `idx` of base `b`, parents `pa` and `pb`. */
static int make_proposal(struct kb_tune *t, const struct base *b, const int *idx,
                         const char *knobs, const char *pa, const char *pb,
                         struct kb_tune_proposal *p, struct kb_error *err) {
  (void)t;
  char name[KB_ID_MAX];
  char compact[256];
  size_t used = 0;
  compact[0] = '\0';
  for (int k = 0; k < b->space.n && used < sizeof compact; k++) {
    int n = snprintf(compact + used, sizeof compact - used, "%s%s=%s", k ? "," : "",
                     b->space.knobs[k].name, b->space.knobs[k].values[idx[k]]);
    if (n < 0)
      break;
    used += (size_t)n;
  }
  snprintf(name, sizeof name, "%.20s~%.42s", b->cand.name, compact);
  int rc = kb_candidate_init(&p->cand, b->cand.task, name, "tune", b->cand.source, knobs,
                             b->cand.flags, err);
  if (rc)
    return rc;
  snprintf(p->cand.parents[0], sizeof p->cand.parents[0], "%s", pa);
  if (pb && strcmp(pa, pb) != 0)
    snprintf(p->cand.parents[1], sizeof p->cand.parents[1], "%s", pb);
  snprintf(p->base, sizeof p->base, "%s", b->id);
  return KB_OK;
}

/* The parents of new knob sets of a base: its best timed knob sets, best first. */
struct parents {
  int idx[PARENTS][KB_TUNE_MAX_KNOBS]; /* knob value indices */
  const char *id[PARENTS];             /* candidate ids, borrowed from the base */
  const struct kb_member *m[PARENTS];  /* borrowed from the population */
  int n;
};

/* Ranks the timed knob sets `b` proposed (members of `pop`) into `par`. */
static void rank_parents(const struct base *b, const struct kb_task_pop *pop,
                         struct parents *par) {
  par->n = 0;
  for (int i = 0; i < b->n_seen; i++) {
    const struct kb_member *m = kb__gen_rank_find(pop, b->seen_ids[i]);
    int idx[KB_TUNE_MAX_KNOBS];
    if (kb__gen_rank_tier(m) < 0 || knob_indices(&b->space, b->seen[i], idx) != 0)
      continue;
    int pos = par->n;
    while (pos > 0 && kb__gen_rank_better(m, par->m[pos - 1]))
      pos--;
    if (pos >= PARENTS)
      continue;
    int last = par->n < PARENTS ? par->n : PARENTS - 1;
    for (int j = last; j > pos; j--) {
      memcpy(par->idx[j], par->idx[j - 1], sizeof par->idx[0]);
      par->id[j] = par->id[j - 1];
      par->m[j] = par->m[j - 1];
    }
    memcpy(par->idx[pos], idx, sizeof idx);
    par->id[pos] = b->seen_ids[i];
    par->m[pos] = m;
    if (par->n < PARENTS)
      par->n++;
  }
}

/* Tries to find a knob set of `b` not proposed yet. Returns KB_OK with `p` filled, KB_EEMPTY. */
static int propose_from(struct kb_tune *t, struct base *b, const struct kb_task_pop *pop,
                        struct kb_tune_proposal *p, struct kb_error *err) {
  struct parents par;
  rank_parents(b, pop, &par);
  int n_par = par.n;
  int(*par_idx)[KB_TUNE_MAX_KNOBS] = par.idx;
  const char **par_id = par.id;
  int idx[KB_TUNE_MAX_KNOBS];
  char knobs[1024];
  const char *pa = b->id, *pb = NULL;
  for (int attempt = 0; attempt < RANDOM_TRIES; attempt++) {
    pa = b->id;
    pb = NULL;
    if (n_par == 0) {
      for (int k = 0; k < b->space.n; k++)
        idx[k] = (int)(rnd(t) % (unsigned)b->space.knobs[k].n_values);
    } else if (n_par >= 2 && rnd(t) % 2 == 0) {
      int x = (int)(rnd(t) % (unsigned)n_par), y = (int)(rnd(t) % (unsigned)(n_par - 1));
      if (y >= x)
        y++;
      for (int k = 0; k < b->space.n; k++)
        idx[k] = rnd(t) % 2 ? par_idx[x][k] : par_idx[y][k];
      pa = par_id[x];
      pb = par_id[y];
    } else {
      /* parents ranked higher are picked more often: the best half the time */
      int x = 0;
      while (x + 1 < n_par && rnd(t) % 2)
        x++;
      memcpy(idx, par_idx[x], sizeof idx);
      int k = (int)(rnd(t) % (unsigned)b->space.n);
      int nv = b->space.knobs[k].n_values;
      if (nv > 1) {
        int v = (int)(rnd(t) % (unsigned)(nv - 1));
        idx[k] = v >= idx[k] ? v + 1 : v;
      }
      pa = par_id[x];
    }
    if (kb__tune_knob_string(&b->space, idx, knobs, sizeof knobs))
      return kb_error_set(err, KB_EINVAL, "tune: knob string of %s too long", b->cand.name);
    if (seen_index(b, knobs) < 0)
      return make_proposal(t, b, idx, knobs, pa, pb, p, err);
  }
  if (b->size <= WALK_MAX) {
    int64_t start = (int64_t)(rnd(t) % (unsigned)b->size);
    for (int64_t i = 0; i < b->size; i++) {
      int64_t v = (start + i) % b->size;
      for (int k = 0; k < b->space.n; k++) {
        idx[k] = (int)(v % b->space.knobs[k].n_values);
        v /= b->space.knobs[k].n_values;
      }
      if (kb__tune_knob_string(&b->space, idx, knobs, sizeof knobs))
        return kb_error_set(err, KB_EINVAL, "tune: knob string of %s too long", b->cand.name);
      if (seen_index(b, knobs) < 0)
        return make_proposal(t, b, idx, knobs, n_par ? par_id[0] : b->id, NULL, p, err);
    }
  }
  b->exhausted = 1;
  kb_info("tune: every knob set of %s/%s was proposed (%d)", b->cand.task, b->cand.name,
          b->n_seen);
  return KB_EEMPTY;
}

int kb__tune_propose(struct kb_tune *t, const struct kb_task_pop *pop,
                    struct kb_tune_proposal *p, struct kb_error *err) {
  memset(p, 0, sizeof *p);
  struct task_state *ts = task_state(t, pop->task);
  if (ts == NULL)
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  int rc = find_bases(t, pop, err);
  if (rc)
    return rc;
  for (;;) {
    struct base *best = NULL;
    for (int i = 0; i < t->n_bases; i++) {
      struct base *b = &t->bases[i];
      if (b->exhausted || strcmp(b->cand.task, pop->task) != 0)
        continue;
      if (best == NULL ||
          kb__gen_rank_better(kb__gen_rank_find(pop, b->id), kb__gen_rank_find(pop, best->id)))
        best = b;
    }
    if (best == NULL) {
      ts->empty_at = pop->n;
      return KB_EEMPTY;
    }
    rc = propose_from(t, best, pop, p, err);
    if (rc != KB_EEMPTY)
      return rc;
  }
}

int kb__tune_commit(struct kb_tune *t, const struct kb_tune_proposal *p, struct kb_error *err) {
  for (int i = 0; i < t->n_bases; i++) {
    struct base *b = &t->bases[i];
    if (strcmp(b->id, p->base) != 0)
      continue;
    if (add_seen(b, p->cand.knobs, p->cand.id))
      return kb_error_set(err, KB_ENOMEM, "out of memory");
    redisReply *rep = NULL;
    int rc = kb_redis_commandf(t->q->redis, &rep, err, "HSETNX %s %s %s", b->key, p->cand.knobs,
                               p->cand.id);
    if (rep)
      freeReplyObject(rep);
    return rc;
  }
  return kb_error_set(err, KB_ENOTFOUND, "tune: no base %.12s", p->base);
}
