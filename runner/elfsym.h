/* Reading a built library's dynamic symbol table without loading it.
 *
 * The compile tier runs no candidate code, so the trusted runner inspects the ELF file itself:
 * a library that does not export kb_forward fails there, before any input is drawn, and one
 * that imports something outside the allow-list (allowlist.h) is rejected there.
 *
 * Only the section headers are read (the dynamic symbol table, its version tables and the
 * dynamic section), as binutils' nm and readelf do: the libraries inspected here come from our
 * own compile command, whose linker always writes them.
 */
#ifndef KB_RUNNER_ELFSYM_H
#define KB_RUNNER_ELFSYM_H

#include <stddef.h>

struct kb_error;

/* Sets `*found` to 1 when the 64-bit ELF shared library at `path` (borrowed) defines a global
 * or weak function `name` (borrowed) in its dynamic symbol table, 0 when it does not.
 * Errors: KB_EIO (cannot read), KB_EPARSE (not a 64-bit ELF file of this machine, or
 * malformed), KB_ENOMEM. */
int kb__elf_defines(const char *path, const char *name, int *found, struct kb_error *err);

/* One undefined symbol of a library: something it needs the dynamic linker to find. */
struct kb__elf_import {
  char *name;    /* symbol name, "memcpy" (owned) */
  char *version; /* version the reference requires, "GLIBC_2.14"; NULL when unversioned (owned) */
  char *library; /* library that version belongs to, "libc.so.6"; NULL when unversioned (owned) */
  int weak;      /* 1: a weak reference (the library loads even when nothing defines it) */
  int object;    /* 1: a data object (STT_OBJECT, STT_TLS); 0: a function or untyped */
};

/* What a library needs from outside: its undefined dynamic symbols and its DT_NEEDED list. */
struct kb__elf_imports {
  struct kb__elf_import *syms; /* n entries, in symbol table order (owned) */
  size_t n;
  char **needed;               /* n_needed DT_NEEDED names, "libc.so.6", in order (owned) */
  size_t n_needed;
};

/* Empties `im` (caller-owned); kb__elf_imports_release() frees its contents (NULL is fine). */
void kb__elf_imports_init(struct kb__elf_imports *im);
void kb__elf_imports_release(struct kb__elf_imports *im);

/* Fills `im` (initialised; old contents released first) with the imports of the 64-bit ELF
 * shared library at `path` (borrowed). A library without a dynamic symbol table is KB_EPARSE:
 * every shared library our compilers build has one. Errors: KB_EIO, KB_EPARSE, KB_ENOMEM. */
int kb__elf_read_imports(const char *path, struct kb__elf_imports *im, struct kb_error *err);

#endif
