/* Dynamic symbol lookup in an ELF file (see elf.h). */
#include "elfsym.h"

#include <elf.h>
#include <stdint.h>
#include <string.h>

#include "kb/buf.h"
#include "kb/error.h"

/* Returns 1 when [off, off + len) lies inside a file of `size` bytes. */
static int in_file(uint64_t off, uint64_t len, size_t size) {
  return off <= size && len <= size - off;
}

int kb__elf_defines(const char *path, const char *name, int *found, struct kb_error *err) {
  struct kb_buf file;
  kb_buf_init(&file);
  *found = 0;
  int rc = kb_buf_read_file(&file, path, err);
  if (rc)
    goto out;
  const unsigned char *data = (const unsigned char *)file.data;
  size_t size = file.len;
  Elf64_Ehdr eh;
  const uint16_t one = 1;
  const int little = *(const unsigned char *)&one == 1;
  if (size < sizeof eh) {
    rc = kb_error_set(err, KB_EPARSE, "\"%s\" is not an elf file", path);
    goto out;
  }
  memcpy(&eh, data, sizeof eh);
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != (little ? ELFDATA2LSB : ELFDATA2MSB) ||
      eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !in_file(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), size)) {
    rc = kb_error_set(err, KB_EPARSE, "\"%s\" is not a 64-bit elf file of this machine", path);
    goto out;
  }
  for (unsigned s = 0; s < eh.e_shnum; s++) {
    Elf64_Shdr sh;
    memcpy(&sh, data + eh.e_shoff + (uint64_t)s * sizeof sh, sizeof sh);
    if (sh.sh_type != SHT_DYNSYM)
      continue;
    Elf64_Shdr strs;
    if (sh.sh_link >= eh.e_shnum || sh.sh_entsize != sizeof(Elf64_Sym) ||
        !in_file(sh.sh_offset, sh.sh_size, size)) {
      rc = kb_error_set(err, KB_EPARSE, "\"%s\": malformed dynamic symbol table", path);
      goto out;
    }
    memcpy(&strs, data + eh.e_shoff + (uint64_t)sh.sh_link * sizeof strs, sizeof strs);
    if (!in_file(strs.sh_offset, strs.sh_size, size)) {
      rc = kb_error_set(err, KB_EPARSE, "\"%s\": malformed dynamic string table", path);
      goto out;
    }
    const char *names = (const char *)data + strs.sh_offset;
    size_t name_len = strlen(name);
    for (uint64_t i = 0; i < sh.sh_size / sizeof(Elf64_Sym); i++) {
      Elf64_Sym sym;
      memcpy(&sym, data + sh.sh_offset + i * sizeof sym, sizeof sym);
      if (sym.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym.st_info) != STT_FUNC)
        continue;
      int bind = ELF64_ST_BIND(sym.st_info);
      if (bind != STB_GLOBAL && bind != STB_WEAK)
        continue;
      if (sym.st_name >= strs.sh_size || strs.sh_size - sym.st_name <= name_len)
        continue;
      if (memcmp(names + sym.st_name, name, name_len + 1) == 0) {
        *found = 1;
        goto out;
      }
    }
  }
out:
  kb_buf_release(&file);
  return rc;
}
