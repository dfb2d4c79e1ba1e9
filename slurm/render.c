/* Template rendering (see render.h). */
#include "render.h"

#include <string.h>

#include "kb/buf.h"
#include "kb/error.h"
#include "kb/redis.h"
#include "templates.h"

static int is_name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

int kb__render(const char *tmpl, const struct kb__var *vars, int n, struct kb_buf *out,
               struct kb_error *err) {
  const char *p = tmpl;
  for (;;) {
    const char *at = strchr(p, '@');
    if (at == NULL)
      break;
    const char *end = at + 1;
    while (is_name_char(*end))
      end++;
    if (*end != '@' || end == at + 1) { /* not a placeholder: copy the "@" */
      if (kb_buf_add(out, p, (size_t)(at + 1 - p)))
        return kb_error_set(err, KB_ENOMEM, "out of memory");
      p = at + 1;
      continue;
    }
    size_t len = (size_t)(end - at - 1);
    const char *value = NULL;
    for (int i = 0; i < n && value == NULL; i++)
      if (strlen(vars[i].name) == len && memcmp(vars[i].name, at + 1, len) == 0)
        value = vars[i].value;
    if (value == NULL)
      return kb_error_set(err, KB_EINTERNAL, "template placeholder \"@%.*s@\" has no value",
                          (int)len, at + 1);
    if (kb_buf_add(out, p, (size_t)(at - p)) || kb_buf_adds(out, value))
      return kb_error_set(err, KB_ENOMEM, "out of memory");
    p = end + 1;
  }
  if (kb_buf_adds(out, p))
    return kb_error_set(err, KB_ENOMEM, "out of memory");
  return KB_OK;
}

int kb__shell_quote(const char *s, struct kb_buf *out) {
  if (kb_buf_adds(out, "'"))
    return KB_ENOMEM;
  for (const char *q = s; *q; q++) {
    int rc = *q == '\'' ? kb_buf_adds(out, "'\\''") : kb_buf_add(out, q, 1);
    if (rc)
      return KB_ENOMEM;
  }
  return kb_buf_adds(out, "'") ? KB_ENOMEM : KB_OK;
}

const char *kb__template_text(const char *name) {
  for (const struct kb__template *t = kb__templates; t->name; t++)
    if (strcmp(t->name, name) == 0)
      return t->text;
  return NULL;
}

int kb__redis_conf_line(int i, struct kb_buf *line) {
  const char *name = NULL;
  for (int k = 0; k <= i; k++) {
    name = kb_redis_server_settings[2 * k];
    if (name == NULL)
      return 0;
  }
  const char *value = kb_redis_server_settings[2 * i + 1];
  kb_buf_reset(line);
  /* the list holds command-line words: "--appendonly" is "appendonly" in a file */
  if (kb_buf_adds(line, name + 2) || kb_buf_adds(line, " ") ||
      kb_buf_adds(line, value[0] ? value : "\"\""))
    return -1;
  return 1;
}
