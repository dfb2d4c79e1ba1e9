/* Between sbatch.c and job_opts.c: the per-job #SBATCH lines. */
#ifndef KB_SLURM_SBATCH_PRIVATE_H
#define KB_SLURM_SBATCH_PRIVATE_H

#include "sbatch.h"

struct kb_buf;

/* Appends job `job`'s --time, --qos, --constraint, --mem and --cpus-per-task lines (its own
 * setting, else the one for every job; cpus default kb__slurm_default_cpus(job, cuda)) and its
 * --sbatch-arg lines (those for every job first) to `b` (borrowed), one "#SBATCH ..." line
 * each. Returns KB_OK or KB_ENOMEM. */
int kb__slurm_job_directives(const struct kb_slurm_opts *o, enum kb_slurm_job job, int cuda,
                             struct kb_buf *b);

#endif
