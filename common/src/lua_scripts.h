/* The Lua scripts of common/lua/, embedded at build time (see embed_lua.cmake). Private. */
#ifndef KB_LUA_SCRIPTS_H
#define KB_LUA_SCRIPTS_H

#include <stddef.h>

struct kb_lua_script {
  const char *name; /* file stem: "claim" for lua/claim.lua; NULL ends the table */
  const char *text; /* script source, NUL-terminated */
  size_t len;       /* bytes, without the NUL */
};

extern const struct kb_lua_script kb_lua_scripts[];

#endif
