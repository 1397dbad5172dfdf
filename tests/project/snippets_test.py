#!/usr/bin/env python3
"""Every C++ snippet of the documentation compiles without a warning, as a user's would: each
```cpp block of README.md and docs/*.md is compiled with -std=c++20 -Wall -Wextra -Werror against
include/ (what an install holds). And the public structs take designated initializers that leave
members out without -Wmissing-field-initializers (GCC warns for an omitted member that has no
default member initializer), which is how the snippets and users write options and jobs.

Usage: snippets_test.py SOURCE_DIR CXX

How a block is compiled:
  - a block with a line starting `int main(` is a whole program: compiled as it is;
  - any other block is a fragment: its `#include`, `namespace X = ...;` and `using namespace`
    lines go to the top of the file, below the headers every fragment gets (delayq/store.h,
    delayq/engine.h, delayq/redis.h, delayq/http.h, <cassert>, <chrono>, <future>, <memory>, <string>,
    <vector>, and `using namespace std::chrono_literals;`); the rest is the body of a block
    inside a function whose parameters are the names fragments take from their surroundings:
    `q` (a std::unique_ptr<delayq::Queue>&) and `url` (a const std::string&). A fragment may
    declare its own `q`: it shadows the parameter.
  - every file is compiled with `-include utility`, as pkg-config's flags for delayq do (Boost
    1.74's Asio headers need <utility> first; see delayq/asio.h).
A block that is not ```cpp but holds C++ statements (a line ending in `;` beside `delayq::` or
`std::`) fails the test: C++ in the docs is marked so, and compiled.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

from docs_test import blocks  # (info string, first line number, text) of each block

FLAGS = ["-std=c++20", "-Wall", "-Wextra", "-Werror", "-include", "utility"]

FRAGMENT_HEAD = """\
#include <delayq/engine.h>
#include <delayq/http.h>
#include <delayq/redis.h>
#include <delayq/store.h>

#include <cassert>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>
using namespace std::chrono_literals;
"""

# The public structs (those at namespace scope in include/delayq/*.h, outside namespace detail),
# each with one member given by a designated initializer and the others left out. A struct added
# to the headers must be added here: the test fails until it is.
STRUCTS = """\
[[maybe_unused]] void structs() {
  delayq::RetryPolicy retry{.max_attempts = 3};
  delayq::JobSpec spec{.topic = "t"};
  delayq::JobSpec spec2{.id = "i", .ttr = 1s};
  delayq::Token token{.fence = 1};
  delayq::Delivery delivery{.attempt = 1};
  delayq::JobInfo info{.state = delayq::JobState::ready};
  delayq::TopicStats topic{.ready = 1};
  delayq::Lateness lateness{.count = 1};
  delayq::DueWindows due{.next_hour = 1};
  delayq::TopicTiming timing{.oldest_ready = 1s};
  delayq::Stats stats{.pushed = 1};
  delayq::Limits limits{.max_body_bytes = 10};
  delayq::HandlerResult result{.delay = 1s};
  delayq::EngineOptions engine{.shards = 2};
  delayq::StoreOptions store{.sync = delayq::Sync::none};
  delayq::RedisOptions redis{.queue = "q"};
  delayq::HttpOptions http{.token = "t"};
  delayq::TopicLimits flow_limits{.max_in_flight = 4};
  delayq::TopicFlow flow{.tokens = 1};
  delayq::JobPage page{.cursor = "c"};
  delayq::ScheduleSpec schedule{.id = "nightly", .rule = "0 2 * * *", .zone = "Europe/Berlin"};
  delayq::ScheduleInfo schedule_info{.paused = true};
  delayq::SchedulePage schedules{.cursor = "c"};
  (void)flow_limits, (void)flow, (void)page, (void)schedule, (void)schedule_info, (void)schedules;
  (void)retry, (void)spec, (void)spec2, (void)token, (void)delivery, (void)info, (void)topic;
  (void)lateness, (void)due, (void)timing, (void)stats, (void)limits, (void)result;
  (void)engine, (void)store, (void)redis, (void)http;
}
"""


def looks_like_cpp(text):
    return bool(re.search(r"delayq::|std::", text)) and bool(
        re.search(r";\s*(//.*)?$", text, re.M))


def translation_unit(text):
    if re.search(r"^int main\(", text, re.M):
        return text + "\n"
    top, body = [], []
    for line in text.split("\n"):
        if re.match(r"\s*#include\b|namespace \w+ = .*;\s*$|using namespace [\w:]+;\s*$", line):
            top.append(line)
        else:
            body.append("    " + line if line else "")
    return (FRAGMENT_HEAD + "\n".join(top) + "\n\n"
            "[[maybe_unused]] void snippet([[maybe_unused]] std::unique_ptr<delayq::Queue>& q,\n"
            "                              [[maybe_unused]] const std::string& url) {\n"
            "  {\n" + "\n".join(body) + "\n  }\n}\n")


def compile_unit(cxx, include, source, where, scratch):
    path = os.path.join(scratch, "unit.cc")
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    r = subprocess.run([cxx, *FLAGS, "-I", include, "-c", path, "-o", os.devnull],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        numbered = "\n".join(f"{i:4} {l}" for i, l in enumerate(source.split("\n"), 1))
        print(f"{where}: does not compile with {' '.join(FLAGS)}:\n{r.stderr}\n"
              f"-- the file compiled:\n{numbered}")
        return False
    return True


def main():
    src, cxx = sys.argv[1], sys.argv[2]
    include = os.path.join(src, "include")
    pages = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))
    ok, compiled = True, 0
    with tempfile.TemporaryDirectory() as scratch:
        for page in pages:
            name = os.path.relpath(page, src)
            for info, line, text in blocks(page):
                where = f"{name}:{line}"
                if info == "cpp":
                    ok &= compile_unit(cxx, include, translation_unit(text), where, scratch)
                    compiled += 1
                elif looks_like_cpp(text):
                    print(f"{where}: a ```{info} block holds C++: mark it ```cpp")
                    ok = False
        # Every public struct is in STRUCTS.
        declared = set()
        for header in glob.glob(os.path.join(include, "delayq", "*.h")):
            text = open(header, encoding="utf-8").read()
            text = re.sub(r"namespace detail \{.*?\n\}  // namespace detail", "", text, flags=re.S)
            declared |= set(re.findall(r"^struct (\w+) \{", text, re.M))
        listed = set(re.findall(r"delayq::(\w+) \w+\{", STRUCTS))
        for missing in sorted(declared - listed):
            print(f"struct {missing} of include/delayq is not in snippets_test.py's STRUCTS")
            ok = False
        ok &= compile_unit(cxx, include, FRAGMENT_HEAD + STRUCTS, "the public structs", scratch)
    if compiled == 0:
        print("no ```cpp block found")
        ok = False
    print(f"{compiled} C++ snippets and the public structs: {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
