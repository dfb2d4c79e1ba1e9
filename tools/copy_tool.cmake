# Copies the Python tool IN to OUT with its version line filled in: `KB_VERSION = "unknown"`
# becomes the project's version and commit, read from VERSION_C (common/version.cmake's
# kb_version.c, regenerated at each build). OUT is rewritten only when its text changes.
file(READ ${VERSION_C} vc)
string(REGEX MATCH "kb_version_string\\[\\] = \"([^\"]*)\"" _ "${vc}")
set(version "${CMAKE_MATCH_1}")
string(REGEX MATCH "kb_commit_string\\[\\] = \"([^\"]*)\"" _ "${vc}")
set(commit "${CMAKE_MATCH_1}")
file(READ ${IN} text)
string(REPLACE "KB_VERSION = \"unknown\"" "KB_VERSION = \"${version} (commit ${commit})\""
       text "${text}")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
else()
  set(old "")
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
  file(CHMOD ${OUT} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
       WORLD_READ WORLD_EXECUTE)
endif()
