/* The job-script templates of slurm/templates/, embedded at build time (embed_templates.cmake).
 */
#ifndef KB_SLURM_TEMPLATES_H
#define KB_SLURM_TEMPLATES_H

#include <stddef.h>

struct kb__template {
  const char *name; /* file name in slurm/templates, e.g. "runners.sbatch" */
  const char *text; /* its contents, NUL-terminated */
  size_t len;       /* bytes, not counting the NUL */
};

/* Every template, ending with an entry whose name is NULL. */
extern const struct kb__template kb__templates[];

#endif
