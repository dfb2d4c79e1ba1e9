/* The import allow-list of tier 0: what a candidate library may need from outside.
 *
 * A candidate is a shared library; everything it can do beyond plain computation goes through
 * the symbols it leaves undefined for the dynamic linker to resolve (pthread_create, dlopen,
 * cudaEventRecord, ...) and the libraries it names as DT_NEEDED. Before any of its code runs,
 * the runner reads both from the ELF file (elfsym.h) and rejects a library that imports a symbol
 * or needs a library outside the lists below. The lists, with the reason for each entry, are
 * documented in docs/candidate-abi.md ("What the runner rejects").
 *
 * This is a tripwire for the common cheats an LLM writes, not a security boundary: code can
 * reach functions without importing them (raw system calls, walking the loaded libraries'
 * tables), which the sandbox, the re-checks and the CUPTI cross-check are there to catch.
 */
#ifndef KB_RUNNER_ALLOWLIST_H
#define KB_RUNNER_ALLOWLIST_H

#include <stddef.h>

struct kb_error;

/* The language, and so the compiler and the allow-list, of a candidate. */
enum kb__lang {
  KB__LANG_C = 0,   /* host C, built with cc, runs on the CPU */
  KB__LANG_CUDA = 1 /* CUDA C++, built with nvcc -cudart shared */
};

/* 1 when a library of language `lang` may import the symbol `name` (borrowed), 0 when not. */
int kb__import_allowed(const char *name, enum kb__lang lang);

/* 1 when a library of language `lang` may name `soname` (borrowed; "libc.so.6") as DT_NEEDED. */
int kb__needed_allowed(const char *soname, enum kb__lang lang);

/* What a forbidden symbol `name` (borrowed) would let a candidate do, as a phrase for a
 * reason ("starts threads"); NULL when it belongs to no known family (it is then refused only
 * because it is not on the allow-list). Static strings. */
const char *kb__import_family(const char *name);

/* Checks the library at `path` (borrowed) against the lists of `lang`. Sets `*allowed` to 1
 * when every import and needed library is allowed; otherwise to 0 and writes into `reason`
 * (`size` bytes) what it imports first that is not, with its family, then how many more and
 * their names as far as they fit: `imports "pthread_create" (starts threads); 2 more not
 * allowed: "dlopen", "socket"`. When `undefined` is not NULL it gets 1 if everything refused
 * is a plain undefined symbol that no library the candidate links defines (unversioned, not
 * weak, of no known family: a helper declared and never written, a build defect rather than
 * a cheat), else 0. Errors, for a file that cannot be checked (the caller decides: a
 * candidate that cannot be checked is not run): KB_EIO, KB_EPARSE, KB_ENOMEM. */
int kb__imports_check(const char *path, enum kb__lang lang, int *allowed, int *undefined,
                      char *reason, size_t size, struct kb_error *err);

#endif
