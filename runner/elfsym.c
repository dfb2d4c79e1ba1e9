/* Dynamic symbols of an ELF file (see elfsym.h). Every offset read from the file is checked
 * against its size before use: the file was written by a compiler the candidate chose flags for,
 * so it is parsed as untrusted input. */
#include "elfsym.h"

#include <elf.h>
#include <stdint.h>
#include <string.h>

#include "kb/alloc.h"
#include "kb/buf.h"
#include "kb/error.h"

/* A file read into memory, its header checked. */
struct elf {
  const char *path;          /* borrowed, for messages */
  const unsigned char *data; /* borrowed from the caller's buffer */
  size_t size;
  Elf64_Ehdr eh;
};

/* A string table: a section's bytes, not necessarily NUL-terminated at the end. */
struct strtab {
  const char *data;
  uint64_t size;
};

/* Returns 1 when [off, off + len) lies inside a file of `size` bytes. */
static int in_file(uint64_t off, uint64_t len, size_t size) {
  return off <= size && len <= size - off;
}

/* Checks the header of the file in `file` and fills `e`. Errors: KB_EPARSE. */
static int elf_open(struct elf *e, const struct kb_buf *file, const char *path,
                    struct kb_error *err) {
  const uint16_t one = 1;
  const int little = *(const unsigned char *)&one == 1;
  e->path = path;
  e->data = (const unsigned char *)file->data;
  e->size = file->len;
  if (e->size < sizeof e->eh)
    return kb_error_set(err, KB_EPARSE, "\"%s\" is not an elf file", path);
  memcpy(&e->eh, e->data, sizeof e->eh);
  if (memcmp(e->eh.e_ident, ELFMAG, SELFMAG) != 0 || e->eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      e->eh.e_ident[EI_DATA] != (little ? ELFDATA2LSB : ELFDATA2MSB) ||
      e->eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !in_file(e->eh.e_shoff, (uint64_t)e->eh.e_shnum * sizeof(Elf64_Shdr), e->size))
    return kb_error_set(err, KB_EPARSE, "\"%s\" is not a 64-bit elf file of this machine", path);
  return KB_OK;
}

static void elf_section(const struct elf *e, unsigned i, Elf64_Shdr *sh) {
  memcpy(sh, e->data + e->eh.e_shoff + (uint64_t)i * sizeof *sh, sizeof *sh);
}

/* The string table of section index `link`. Errors: KB_EPARSE. */
static int elf_strtab(const struct elf *e, unsigned link, struct strtab *st,
                      struct kb_error *err) {
  Elf64_Shdr sh;
  if (link >= e->eh.e_shnum)
    return kb_error_set(err, KB_EPARSE, "\"%s\": malformed string table link", e->path);
  elf_section(e, link, &sh);
  if (!in_file(sh.sh_offset, sh.sh_size, e->size))
    return kb_error_set(err, KB_EPARSE, "\"%s\": malformed dynamic string table", e->path);
  st->data = (const char *)e->data + sh.sh_offset;
  st->size = sh.sh_size;
  return KB_OK;
}

/* The NUL-terminated string at `off` in `st`, or NULL when it runs past the table. */
static const char *strtab_get(const struct strtab *st, uint64_t off) {
  if (off >= st->size || memchr(st->data + off, '\0', st->size - off) == NULL)
    return NULL;
  return st->data + off;
}

int kb__elf_defines(const char *path, const char *name, int *found, struct kb_error *err) {
  struct kb_buf file;
  struct elf e;
  kb_buf_init(&file);
  *found = 0;
  int rc = kb_buf_read_file(&file, path, err);
  if (rc == KB_OK)
    rc = elf_open(&e, &file, path, err);
  for (unsigned s = 0; rc == KB_OK && s < e.eh.e_shnum && !*found; s++) {
    Elf64_Shdr sh;
    elf_section(&e, s, &sh);
    if (sh.sh_type != SHT_DYNSYM)
      continue;
    struct strtab names;
    if (sh.sh_entsize != sizeof(Elf64_Sym) || !in_file(sh.sh_offset, sh.sh_size, e.size)) {
      rc = kb_error_set(err, KB_EPARSE, "\"%s\": malformed dynamic symbol table", path);
      break;
    }
    rc = elf_strtab(&e, sh.sh_link, &names, err);
    for (uint64_t i = 0; rc == KB_OK && i < sh.sh_size / sizeof(Elf64_Sym); i++) {
      Elf64_Sym sym;
      memcpy(&sym, e.data + sh.sh_offset + i * sizeof sym, sizeof sym);
      if (sym.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym.st_info) != STT_FUNC)
        continue;
      int bind = ELF64_ST_BIND(sym.st_info);
      if (bind != STB_GLOBAL && bind != STB_WEAK)
        continue;
      const char *sym_name = strtab_get(&names, sym.st_name);
      if (sym_name != NULL && strcmp(sym_name, name) == 0) {
        *found = 1;
        break;
      }
    }
  }
  kb_buf_release(&file);
  return rc;
}

void kb__elf_imports_init(struct kb__elf_imports *im) { memset(im, 0, sizeof *im); }

void kb__elf_imports_release(struct kb__elf_imports *im) {
  if (im == NULL)
    return;
  for (size_t i = 0; i < im->n; i++) {
    kb_free(im->syms[i].name);
    kb_free(im->syms[i].version);
    kb_free(im->syms[i].library);
  }
  kb_free(im->syms);
  for (size_t i = 0; i < im->n_needed; i++)
    kb_free(im->needed[i]);
  kb_free(im->needed);
  kb__elf_imports_init(im);
}

/* A version index's names: the version and the library of a Vernaux entry. */
struct version_name {
  unsigned index;
  const char *version;
  const char *library;
};

/* Reads the SHT_GNU_verneed section `sh` into `*out` (new, `*n` entries). Errors: KB_EPARSE,
 * KB_ENOMEM. */
static int read_verneed(const struct elf *e, const Elf64_Shdr *sh, struct version_name **out,
                        size_t *n, struct kb_error *err) {
  struct strtab st;
  *out = NULL;
  *n = 0;
  if (!in_file(sh->sh_offset, sh->sh_size, e->size))
    return kb_error_set(err, KB_EPARSE, "\"%s\": malformed version needs", e->path);
  int rc = elf_strtab(e, sh->sh_link, &st, err);
  if (rc)
    return rc;
  uint64_t off = 0;
  /* sh_info counts the Verneed entries; the bound on steps guards against a looping chain */
  for (uint64_t i = 0; i < sh->sh_info && i < 4096; i++) {
    Elf64_Verneed vn;
    if (!in_file(off, sizeof vn, sh->sh_size))
      return kb_error_set(err, KB_EPARSE, "\"%s\": malformed version needs", e->path);
    memcpy(&vn, e->data + sh->sh_offset + off, sizeof vn);
    const char *file = strtab_get(&st, vn.vn_file);
    uint64_t aoff = off + vn.vn_aux;
    for (unsigned a = 0; a < vn.vn_cnt && a < 4096; a++) {
      Elf64_Vernaux va;
      if (aoff < off || !in_file(aoff, sizeof va, sh->sh_size))
        return kb_error_set(err, KB_EPARSE, "\"%s\": malformed version needs", e->path);
      memcpy(&va, e->data + sh->sh_offset + aoff, sizeof va);
      struct version_name *grown = kb_reallocarray(*out, *n + 1, sizeof **out);
      if (grown == NULL)
        return kb_error_set(err, KB_ENOMEM, "cannot read \"%s\": out of memory", e->path);
      *out = grown;
      (*out)[(*n)++] = (struct version_name){va.vna_other & 0x7fff,
                                             strtab_get(&st, va.vna_name), file};
      if (va.vna_next == 0)
        break;
      aoff += va.vna_next;
    }
    if (vn.vn_next == 0)
      break;
    off += vn.vn_next;
  }
  return KB_OK;
}

/* Appends a copy of `s` (may be NULL: stays NULL) into `*dst`. Returns 0 on ENOMEM. */
static int copy_opt(char **dst, const char *s) {
  *dst = NULL;
  if (s == NULL)
    return 1;
  *dst = kb_strdup(s);
  return *dst != NULL;
}

/* Kept whole (126 lines): one walk over the ELF sections, symbols and dynamic entries sharing
 * the mapped file and one cleanup. */
int kb__elf_read_imports(const char *path, struct kb__elf_imports *im, struct kb_error *err) {
  struct kb_buf file;
  struct elf e;
  struct version_name *versions = NULL;
  size_t n_versions = 0;
  kb_buf_init(&file);
  kb__elf_imports_release(im);
  int rc = kb_buf_read_file(&file, path, err);
  if (rc == KB_OK)
    rc = elf_open(&e, &file, path, err);
  if (rc)
    goto out;

  Elf64_Shdr dynsym = {0}, versym = {0}, dynamic = {0};
  int have_dynsym = 0, have_versym = 0, have_dynamic = 0;
  for (unsigned s = 0; s < e.eh.e_shnum; s++) {
    Elf64_Shdr sh;
    elf_section(&e, s, &sh);
    if (sh.sh_type == SHT_DYNSYM && !have_dynsym) {
      dynsym = sh;
      have_dynsym = 1;
    } else if (sh.sh_type == SHT_GNU_versym && !have_versym) {
      versym = sh;
      have_versym = 1;
    } else if (sh.sh_type == SHT_DYNAMIC && !have_dynamic) {
      dynamic = sh;
      have_dynamic = 1;
    } else if (sh.sh_type == SHT_GNU_verneed && versions == NULL) {
      rc = read_verneed(&e, &sh, &versions, &n_versions, err);
      if (rc)
        goto out;
    }
  }
  if (!have_dynsym) {
    rc = kb_error_set(err, KB_EPARSE, "\"%s\" has no dynamic symbol table", path);
    goto out;
  }
  if (dynsym.sh_entsize != sizeof(Elf64_Sym) ||
      !in_file(dynsym.sh_offset, dynsym.sh_size, e.size) ||
      (have_versym && !in_file(versym.sh_offset, versym.sh_size, e.size))) {
    rc = kb_error_set(err, KB_EPARSE, "\"%s\": malformed dynamic symbol table", path);
    goto out;
  }
  struct strtab names;
  rc = elf_strtab(&e, dynsym.sh_link, &names, err);
  if (rc)
    goto out;
  uint64_t n_syms = dynsym.sh_size / sizeof(Elf64_Sym);
  for (uint64_t i = 1; i < n_syms; i++) {
    Elf64_Sym sym;
    memcpy(&sym, e.data + dynsym.sh_offset + i * sizeof sym, sizeof sym);
    if (sym.st_shndx != SHN_UNDEF || sym.st_name == 0)
      continue;
    const char *name = strtab_get(&names, sym.st_name);
    if (name == NULL) {
      rc = kb_error_set(err, KB_EPARSE, "\"%s\": malformed symbol name", path);
      goto out;
    }
    const char *version = NULL, *library = NULL;
    if (have_versym && (i + 1) * sizeof(uint16_t) <= versym.sh_size) {
      uint16_t v;
      memcpy(&v, e.data + versym.sh_offset + i * sizeof v, sizeof v);
      v &= 0x7fff;
      for (size_t k = 0; v > 1 && k < n_versions; k++)
        if (versions[k].index == v) {
          version = versions[k].version;
          library = versions[k].library;
          break;
        }
    }
    struct kb__elf_import *grown = kb_reallocarray(im->syms, im->n + 1, sizeof *im->syms);
    if (grown == NULL)
      goto nomem;
    im->syms = grown;
    struct kb__elf_import *imp = &im->syms[im->n];
    memset(imp, 0, sizeof *imp);
    im->n++;
    int type = ELF64_ST_TYPE(sym.st_info);
    imp->weak = ELF64_ST_BIND(sym.st_info) == STB_WEAK;
    imp->object = type == STT_OBJECT || type == STT_TLS;
    if (!copy_opt(&imp->name, name) || !copy_opt(&imp->version, version) ||
        !copy_opt(&imp->library, library))
      goto nomem;
  }

  if (have_dynamic) {
    struct strtab dstr;
    if (!in_file(dynamic.sh_offset, dynamic.sh_size, e.size)) {
      rc = kb_error_set(err, KB_EPARSE, "\"%s\": malformed dynamic section", path);
      goto out;
    }
    rc = elf_strtab(&e, dynamic.sh_link, &dstr, err);
    if (rc)
      goto out;
    for (uint64_t off = 0; off + sizeof(Elf64_Dyn) <= dynamic.sh_size; off += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      memcpy(&d, e.data + dynamic.sh_offset + off, sizeof d);
      if (d.d_tag == DT_NULL)
        break;
      if (d.d_tag != DT_NEEDED)
        continue;
      const char *lib = strtab_get(&dstr, d.d_un.d_val);
      if (lib == NULL) {
        rc = kb_error_set(err, KB_EPARSE, "\"%s\": malformed needed library name", path);
        goto out;
      }
      char **grown = kb_reallocarray(im->needed, im->n_needed + 1, sizeof *im->needed);
      if (grown == NULL)
        goto nomem;
      im->needed = grown;
      im->needed[im->n_needed] = kb_strdup(lib);
      if (im->needed[im->n_needed] == NULL)
        goto nomem;
      im->n_needed++;
    }
  }
  goto out;
nomem:
  rc = kb_error_set(err, KB_ENOMEM, "cannot read \"%s\": out of memory", path);
out:
  kb_free(versions);
  kb_buf_release(&file);
  if (rc)
    kb__elf_imports_release(im);
  return rc;
}
