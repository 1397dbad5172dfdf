// The standard library headers most of delayq's sources include, precompiled once per build
// directory and put first in every C++ compilation of the tree (DELAYQ_PCH, CMakeLists.txt).
// Parsing them is most of the time a small source takes to compile: 2 to 3 s of a 3 to 5 s
// compilation here. Nothing in the project relies on them being here: each source includes what
// it uses, and a build with -DDELAYQ_PCH=OFF compiles the same sources without them. Not here:
// <filesystem> and <iomanip>, whose std::quoted would be found by argument-dependent lookup
// before the project's quoted() of a std::string (src/wire/fields.h, src/cli/parse.cc) in the
// sources that do not include them.
#pragma once

// First: Boost 1.74's Asio uses std::exchange without including <utility> (src/CMakeLists.txt).
#include <utility>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>
