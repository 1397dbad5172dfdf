// The backend's function library, put together from the embedded Lua (lua_sources.h): a first
// line that names it and sets TAG, the prelude and the helper files (flow, take), then one file per
// function in ScriptId order.
#include "redis/scripts.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>

#include "redis/fnv1a.h"
#include "redis/lua_sources.h"

namespace delayq::redis {

namespace {

std::string_view lua_file(std::string_view name) {
  for (const lua::File& f : lua::files())
    if (f.name == name) return f.text;
  // A script without its file is a build mistake (src/redis/CMakeLists.txt lists the files).
  fmt::print(stderr, "delayq: the Redis function library has no file {}.lua\n", name);
  std::abort();
}

Library make_library(std::initializer_list<const char*> names) {
  std::string code(lua_file("prelude"));
  // The helpers of flow control and of claiming, which register no function.
  for (const char* helper : {"flow", "take"}) (code += '\n') += lua_file(helper);
  for (const char* name : names) (code += '\n') += lua_file(name);
  // Named after its source, so that clients of different versions sharing a server each find
  // their own functions.
  const std::string hex = fmt::format("{:016x}", fnv1a64(code));
  const std::string tag = "dq" + hex + "_";
  Library lib;
  lib.name = "delayq_" + hex;
  // The functions' names carry the tag too: function names are global to a server, not per
  // library (the prelude's register() prefixes them with TAG).
  lib.source = "#!lua name=" + lib.name + "\nlocal TAG = '" + tag + "'\n" + code;
  for (const char* name : names) {
    const std::string_view n(name);
    const bool reads = n == "get" || n == "list_dead" || n == "topic_stats" || n == "flow_stats";
    lib.scripts.push_back(Script{name, tag + name, !reads});
  }
  return lib;
}

}  // namespace

const Library& library() {
  // In ScriptId order.
  static const Library lib = make_library({
      "push",
      "claim",
      "ack",
      "nack",
      "dead_letter",
      "touch",
      "cancel",
      "get",
      "reschedule",
      "requeue_dead",
      "list_dead",
      "requeue_dead_topic",
      "purge_dead",
      "topic_stats",
      "push_many",
      "ack_claim",
      "release",
      "pause",
      "ack_many",
      "set_limits",
      "flow_stats",
      "list_jobs",
      "admit",
      "settle",
      "place",
      "sched",
      "push_once",
      "sched_index",
  });
  return lib;
}

}  // namespace delayq::redis
