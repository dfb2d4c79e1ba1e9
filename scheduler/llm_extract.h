/* Finding the kernel in an LLM's answer.
 *
 * An answer holds Markdown: the kernel is a fenced code block (``` or ~~~, up to 3 spaces of
 * indent) whose info string is cuda, cu, c, cpp, c++, cc, cxx, h, or empty. Among the complete
 * blocks (an unterminated block, as a truncated answer leaves, is ignored) that define
 * kb_forward (the name, its parameter list, then a body "{"), the largest is taken; on a tie the
 * last. Blocks in other languages (python, text) are never taken.
 *
 * A KernelBench-format answer (llm "format": "kernelbench") is taken the same way from the
 * blocks whose info string is python, py, python3 or empty, among those that define ModelNew:
 * kb_source_defines_modelnew (kb/candidate.h; a light static check, the PyTorch worker does
 * the rest).
 */
#ifndef KB_SCHED_LLM_EXTRACT_H
#define KB_SCHED_LLM_EXTRACT_H

struct kb_error;

/* Extracts the kernel from `text` (borrowed) into `*out` (new, NUL-terminated; kb_free).
 * Errors: KB_ENOTFOUND "no code block defines kb_forward" (with how many blocks were seen),
 * KB_ENOMEM. */
int kb__llm_extract_code(const char *text, char **out, struct kb_error *err);

/* Same for a KernelBench answer: the Python block defining ModelNew. Errors: KB_ENOTFOUND
 * "no code block defines class ModelNew" (with how many blocks were seen), KB_ENOMEM. */
int kb__llm_extract_python(const char *text, char **out, struct kb_error *err);

/* 1 when `source` (borrowed) defines kb_forward: the name, a parenthesised parameter list, then
 * "{" (comments and blanks between are skipped); else 0. A declaration alone is not enough. */
int kb__llm_defines_forward(const char *source);

#endif
