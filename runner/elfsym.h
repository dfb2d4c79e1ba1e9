/* Reading a built library's dynamic symbol table without loading it.
 *
 * The compile tier runs no candidate code, so the trusted runner inspects the ELF file itself:
 * a library that does not export kb_forward fails there, before any input is drawn.
 */
#ifndef KB_RUNNER_ELFSYM_H
#define KB_RUNNER_ELFSYM_H

struct kb_error;

/* Sets `*found` to 1 when the 64-bit ELF shared library at `path` (borrowed) defines a global
 * or weak function `name` (borrowed) in its dynamic symbol table, 0 when it does not.
 * Errors: KB_EIO (cannot read), KB_EPARSE (not a 64-bit ELF file of this machine, or
 * malformed), KB_ENOMEM. */
int kb__elf_defines(const char *path, const char *name, int *found, struct kb_error *err);

#endif
