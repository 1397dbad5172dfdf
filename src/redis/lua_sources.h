// The Lua of the Redis backend's function library, as text: src/redis/lua/*.lua, embedded at build
// time (lua/embed_lua.cmake writes lua_sources.cc into the build tree). scripts.cc puts the library
// together from it.
#pragma once

#include <span>
#include <string_view>

namespace delayq::redis::lua {

struct File {
  std::string_view name;  // the file's name without ".lua": "prelude", or the function it registers
  std::string_view text;
};

// Every file: the prelude first, then one per function, in the order src/redis/CMakeLists.txt
// lists them.
std::span<const File> files();

}  // namespace delayq::redis::lua
