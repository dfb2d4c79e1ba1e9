/* The confined sandbox's own process between candidates (docs/sandbox.md, "Between
 * candidates").
 *
 * A confined kb-sandbox evaluates candidate after candidate in one process, and a candidate
 * runs in that process's address space: what it changes there stays for the candidates after
 * it (tests/catalogue/host/timer_forge.c rewrites the sandbox's own relocation of
 * clock_gettime at its first call: every later evaluation in that process is timed on a clock
 * running 40x slow). The witness holds the last tier's timing to a clock outside the process,
 * but the lower tiers' timings, which decide what climbs, are taken inside it.
 *
 * This module takes a snapshot of what the sandbox's own code depends on, once, before any
 * candidate is loaded, and checks it after each candidate's evaluation and witness:
 *   - the read-only-after-relocation segment (PT_GNU_RELRO: the resolved function table, the
 *     read-only data with addresses) of every object loaded then (the sandbox, the C library,
 *     the dynamic loader, the CUDA libraries), by a 64-bit checksum of its contents;
 *   - the permissions of every file-backed mapping present then (/proc/self/maps, read through
 *     a descriptor opened before confinement: the kernel writes it anew at each read), but for
 *     device files and memory files, which a driver maps and unmaps at will, so that
 *     code made writable, or a relocation table left writable, shows even when its contents
 *     were put back;
 *   - on the host, any executable mapping that no file backs (code a candidate wrote for
 *     itself), but for the kernel's [vdso] and [vsyscall].
 *   - on the host, the code (every executable PT_LOAD segment) of every object loaded then, the
 *     vDSO's included, by the same checksum: code rewritten in place with its protection put
 *     back leaves the maps as they were (tests/runner/candidates/text_patch.c rewrote the C
 *     library's clock_gettime to run 40x slow, ok, and so was every candidate after it).
 *   - every signal's action (SIGSYS's aside: the filter keeps it) and the signal mask, and the
 *     file behind the maps descriptor (a candidate could close it and put another there);
 * What is not held: the sandbox's writable data (its heap, the dynamic loader's lazily bound
 * entries outside RELRO), which a candidate can still change without a trace here.
 *
 * Errors: KB_ENOMEM, KB_EIO (the maps cannot be read), filled in `err`.
 */
#ifndef KB_SANDBOX_INTEGRITY_H
#define KB_SANDBOX_INTEGRITY_H

#include <stddef.h>
#include <stdint.h>

#include "kb/error.h"

struct kb__integrity; /* opaque */

/* A new record over the maps file descriptor `maps_fd` (opened O_RDONLY on /proc/self/maps
 * before confinement; owned from here on, closed by kb__integrity_free) into *out. `host`: the
 * host backend (anonymous executable mappings count there). */
int kb__integrity_new(int maps_fd, int host, struct kb__integrity **out, struct kb_error *err);

/* Takes the snapshot: every object loaded now and every file-backed mapping. */
int kb__integrity_snapshot(struct kb__integrity *g, struct kb_error *err);

/* Compares the process with the snapshot: 0 when it is as it was, 1 when not (`why` says
 * what changed first), or a negative enum kb_err when it cannot tell (`err`). */
int kb__integrity_check(struct kb__integrity *g, char *why, size_t size, struct kb_error *err);

/* 1 when an object loaded from `path` (the name dlopen was given) is still in the process. A
 * candidate's library that stays loaded after its dlclose (a GNU unique symbol, a second
 * dlopen of itself, RTLD_NODELETE) keeps code of its own in the process for the candidates
 * after it: on the host, where candidates are C and none needs that, the sandbox treats it as a
 * change (a CUDA library's C++ may hold unique symbols honestly). */
int kb__integrity_loaded(const char *path);

/* The checksum of the code (every executable PT_LOAD segment) and of the read-only-after-
 * relocation segment (its resolved function table, when linked with -z relro -z now) of the
 * loaded object that holds the function `fn`, into *sum: what the sandbox runs of a library it
 * compares a candidate with (the oracle of the fresh references, the same-run baseline), which
 * the candidate's code, in the same process, could rewrite. Returns 0, or -1 when no loaded
 * object holds `fn`. */
int kb__integrity_object_sum(const void *fn, uint64_t *sum);

/* The floating-point environment between candidates. A candidate runs on the sandbox's one
 * thread, and the rounding mode, flush-to-zero and denormals-are-zero and the exception masks it
 * leaves (MXCSR, the x87 control word) would hold for everything after its call: the sandbox's
 * own draws of fresh inputs and their checksums, the oracle, the comparison, the next candidate.
 * kb__fpenv_save records this thread's environment (call it once, before any candidate is
 * loaded); kb__fpenv_restore puts it back when its control bits changed (the sticky flags are not
 * compared): the engine calls it after every call of a candidate's code (kb_forward, a library's
 * load and unload). A few nanoseconds when nothing changed (x86-64: two register reads). */
void kb__fpenv_save(void);
void kb__fpenv_restore(void);

/* Frees `g` (NULL: nothing) and closes its descriptor. */
void kb__integrity_free(struct kb__integrity *g);

#endif
