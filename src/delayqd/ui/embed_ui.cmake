# Writes OUT, a C++ file holding the dashboard's files (src/delayqd/ui) as raw string literals,
# so that delayqd serves them from the binary: no files to install, no network, no build tool
# beyond CMake. Run by src/delayqd/CMakeLists.txt: cmake -DDIR=... -DOUT=... -P embed_ui.cmake
# path|file|content type (all are UTF-8 text; the charset is added below: a ";" would split the list)
set(files
  "/ui|index.html|text/html"
  "/ui/app.js|app.js|text/javascript"
  "/ui/topic.js|topic.js|text/javascript"
  "/ui/schedules.js|schedules.js|text/javascript"
  "/ui/style.css|style.css|text/css")
set(body "// Generated from src/delayqd/ui/ by src/delayqd/ui/embed_ui.cmake: edit those, not this.\n")
string(APPEND body "#include \"delayqd/ui_files.h\"\n\nnamespace delayq::http {\n\n")
string(APPEND body "const UiFile kUiFiles[] = {\n")
foreach(entry IN LISTS files)
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 path)
  list(GET parts 1 name)
  list(GET parts 2 type)
  file(READ "${DIR}/${name}" text)
  string(FIND "${text}" ")delayq_ui\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${DIR}/${name} holds )delayq_ui\", which ends the raw string that embeds it")
  endif()
  string(APPEND body "    {\"${path}\", \"${type}; charset=utf-8\", R\"delayq_ui(${text})delayq_ui\"},\n")
endforeach()
string(APPEND body "};\n\nconst size_t kUiFileCount = sizeof kUiFiles / sizeof kUiFiles[0];\n\n")
string(APPEND body "}  // namespace delayq::http\n")
# Written only when it changed, so that an unchanged dashboard does not rebuild the daemon.
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL body)
  file(WRITE "${OUT}" "${body}")
endif()
