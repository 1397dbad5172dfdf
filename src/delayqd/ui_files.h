// The dashboard's files (src/delayqd/ui), built into delayqd by src/delayqd/ui/embed_ui.cmake and
// served by the /ui routes (routes_ui.cc).
#pragma once

#include <cstddef>
#include <string_view>

namespace delayq::http {

struct UiFile {
  std::string_view path;          // "/ui", "/ui/app.js", ...
  std::string_view content_type;  // with its charset
  std::string_view body;
};

extern const UiFile kUiFiles[];
extern const size_t kUiFileCount;

}  // namespace delayq::http
