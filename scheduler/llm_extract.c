/* Code extraction from LLM answers (see llm_extract.h). */
#include "llm_extract.h"

#include <string.h>

#include "kb/alloc.h"
#include "kb/candidate.h"
#include "kb/error.h"

static const char *skip_blank(const char *p) {
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
      p++;
    if (p[0] == '/' && p[1] == '*') {
      const char *e = strstr(p + 2, "*/");
      if (e == NULL)
        return p + strlen(p);
      p = e + 2;
    } else if (p[0] == '/' && p[1] == '/') {
      const char *e = strchr(p, '\n');
      if (e == NULL)
        return p + strlen(p);
      p = e;
    } else {
      return p;
    }
  }
}

static int ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

int kb__llm_defines_forward(const char *source) {
  static const char name[] = "kb_forward";
  const char *p = source;
  while ((p = strstr(p, name)) != NULL) {
    int word = (p == source || !ident_char(p[-1])) && !ident_char(p[sizeof name - 1]);
    const char *q = p + sizeof name - 1;
    p = q;
    if (!word)
      continue;
    q = skip_blank(q);
    if (*q != '(')
      continue;
    int depth = 0;
    for (; *q; q++) {
      if (*q == '(')
        depth++;
      else if (*q == ')' && --depth == 0)
        break;
    }
    if (*q != ')')
      return 0;
    q = skip_blank(q + 1);
    if (*q == '{')
      return 1;
  }
  return 0;
}

/* The fence at the start of line `p` ("```" or "~~~", 3 or more, up to 3 spaces of indent):
 * returns its length and sets `*ch`, or 0 when the line is no fence. */
static size_t fence_at(const char *p, char *ch, const char **after) {
  int indent = 0;
  while (*p == ' ' && indent < 4) {
    p++;
    indent++;
  }
  if (indent > 3 || (*p != '`' && *p != '~'))
    return 0;
  size_t n = 0;
  while (p[n] == *p)
    n++;
  if (n < 3)
    return 0;
  *ch = *p;
  *after = p + n;
  return n;
}

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

static int same_word(const char *a, const char *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (lower((unsigned char)a[i]) != b[i])
      return 0;
  return 1;
}

static const char *const c_langs[] = {"cuda", "cu", "c", "cpp", "c++", "cc", "cxx", "h", NULL};
static const char *const py_langs[] = {"python", "py", "python3", NULL};

static int lang_ok(const char *const *langs, const char *info, size_t len) {
  while (len > 0 && (*info == ' ' || *info == '\t')) {
    info++;
    len--;
  }
  size_t w = 0;
  while (w < len && info[w] != ' ' && info[w] != '\t' && info[w] != '\r' && info[w] != '{')
    w++;
  if (w == 0)
    return 1;
  for (int i = 0; langs[i]; i++)
    if (strlen(langs[i]) == w && same_word(info, langs[i], w))
      return 1;
  return 0;
}

/* The largest complete block in one of `langs` (or without an info string) whose text passes
 * `defines`; on a tie the last. */
static int extract(const char *text, const char *const *langs, int (*defines)(const char *),
                   const char *what, char **out, struct kb_error *err) {
  *out = NULL;
  const char *best = NULL;
  size_t best_len = 0;
  int blocks = 0;
  const char *line = text;
  while (*line) {
    char ch = 0;
    const char *after = NULL;
    size_t n = fence_at(line, &ch, &after);
    const char *eol = strchr(line, '\n');
    if (n == 0) {
      line = eol ? eol + 1 : line + strlen(line);
      continue;
    }
    size_t info_len = eol ? (size_t)(eol - after) : strlen(after);
    int wanted = lang_ok(langs, after, info_len);
    if (eol == NULL)
      break; /* a fence on the last line opens nothing */
    const char *body = eol + 1;
    const char *end = NULL; /* start of the closing fence line */
    const char *next = NULL;
    for (const char *l = body; *l;) {
      char c2 = 0;
      const char *a2 = NULL;
      size_t n2 = fence_at(l, &c2, &a2);
      const char *e2 = strchr(l, '\n');
      if (n2 >= n && c2 == ch) {
        const char *rest = a2;
        while (*rest == ' ' || *rest == '\t' || *rest == '\r')
          rest++;
        if (*rest == '\n' || *rest == '\0') {
          end = l;
          next = e2 ? e2 + 1 : l + strlen(l);
          break;
        }
      }
      l = e2 ? e2 + 1 : l + strlen(l);
    }
    if (end == NULL)
      break; /* unterminated: a truncated answer */
    blocks++;
    size_t len = (size_t)(end - body);
    if (wanted && len >= best_len) {
      char *copy = kb_strndup(body, len);
      if (copy == NULL)
        return kb_error_set(err, KB_ENOMEM, "out of memory");
      if (defines(copy)) {
        best = body;
        best_len = len;
      }
      kb_free(copy);
    }
    line = next;
  }
  if (best == NULL)
    return kb_error_set(err, KB_ENOTFOUND,
                        "no code block defines %s (%d complete block%s in the answer)", what,
                        blocks, blocks == 1 ? "" : "s");
  *out = kb_strndup(best, best_len);
  return *out ? KB_OK : kb_error_set(err, KB_ENOMEM, "out of memory");
}

int kb__llm_extract_code(const char *text, char **out, struct kb_error *err) {
  return extract(text, c_langs, kb__llm_defines_forward, "kb_forward", out, err);
}

int kb__llm_extract_python(const char *text, char **out, struct kb_error *err) {
  return extract(text, py_langs, kb_source_defines_modelnew, "class ModelNew", out, err);
}
