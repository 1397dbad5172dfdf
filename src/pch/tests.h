// What the tests' precompiled header adds to the library's (src/pch/std.h): GoogleTest, which
// every test source includes (DELAYQ_PCH, CMakeLists.txt).
#pragma once

#include "pch/std.h"

#include <gtest/gtest.h>
