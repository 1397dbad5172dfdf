// Small helpers for tests that work on a store's files: a temporary directory (temp_dir.h), the
// files of a kind in it, and damage done to one byte.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "temp_dir.h"

namespace delayq::testing {

// The files in `dir` whose names end with `suffix` (".log", ".sst"), sorted by name.
inline std::vector<std::string> files_ending(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().ends_with(suffix)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Inverts the bits of the byte at `offset`. False if the file is shorter.
inline bool flip_byte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  char c = 0;
  if (!f.seekg(static_cast<std::streamoff>(offset)) || !f.get(c)) return false;
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(~c));
  return static_cast<bool>(f.flush());
}

}  // namespace delayq::testing
