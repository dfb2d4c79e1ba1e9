/* Rendering of the job-script templates: "@NAME@" placeholders replaced by values.
 */
#ifndef KB_SLURM_RENDER_H
#define KB_SLURM_RENDER_H

#include <stddef.h>

struct kb_buf;
struct kb_error;

/* One placeholder: "@name@" in a template becomes `value`. */
struct kb__var {
  const char *name;  /* without the @s (borrowed) */
  const char *value; /* inserted as is (borrowed); see kb__shell_quote for shell words */
};

/* Appends `tmpl` (borrowed) to `out` with every "@NAME@" (NAME of capitals, digits and _)
 * replaced by the value of the variable of that name among `vars` (`n` of them); any other "@"
 * is copied. Errors: KB_EINTERNAL naming a placeholder that has no variable, KB_ENOMEM. */
int kb__render(const char *tmpl, const struct kb__var *vars, int n, struct kb_buf *out,
               struct kb_error *err);

/* Appends `s` (borrowed) to `out` as one shell word in single quotes ('it'\''s'), which the
 * shell reads back exactly. Errors: KB_ENOMEM. */
int kb__shell_quote(const char *s, struct kb_buf *out);

/* Setting `i` of kb_redis_server_settings (kb/redis.h; its name-value pairs counted from 0) as
 * a redis.conf line without the newline ("appendonly yes"; an empty value as "", 'save ""'),
 * into `line` (reset first). Returns 1 with the line, 0 past the last setting, -1 (ENOMEM). */
int kb__redis_conf_line(int i, struct kb_buf *line);

/* The template named `name` ("runners.sbatch"), or NULL. Borrowed, static. */
const char *kb__template_text(const char *name);

#endif
