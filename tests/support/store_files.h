// Small helpers for tests that work on a store's files: a temporary directory, the files of a
// kind in it, and damage done to one byte.
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace delayq::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "delayq-files-XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

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
