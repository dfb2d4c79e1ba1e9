/* What `kb-submit validate` checks beyond the files' text: each task's oracle builds. A C
 * oracle is compiled with the host compiler (`cc -fsyntax-only`, kb_kernel.h from
 * $KB_INCLUDE_DIR or the source tree's common/include), a CUDA oracle with `nvcc -c` when nvcc
 * is on PATH (and $KB_VALIDATE_NVCC is not "0": 13 CUDA oracles take 20 s); a PyTorch oracle must parse and define `class Model` ($KB_PYTHON, default
 * /usr/bin/python3; all of them in one interpreter). A missing compiler or interpreter skips
 * the check (the runner's build will say it); "data" oracles have nothing to build.
 */
#ifndef KB_SUBMITTER_ORACLE_CHECK_H
#define KB_SUBMITTER_ORACLE_CHECK_H

struct kb_error;
struct kb_submission;

/* Checks the oracles of `s` (borrowed). KB_EPARSE "<task.json>: \"oracle.source\" \"<file>\"
 * does not compile (<tool>): <its first error lines>" for the first that fails; KB_ENOMEM,
 * KB_EIO when a tool cannot be run for another reason than its absence. */
int kb__oracles_check(const struct kb_submission *s, struct kb_error *err);

#endif
