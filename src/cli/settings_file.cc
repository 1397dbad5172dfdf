// The CLI's settings file (see settings_file.h).
#include "cli/settings_file.h"

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "wire/fields.h"

namespace delayq::cli {

namespace {

namespace fs = std::filesystem;

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// The file to read, and whether it must exist (named by DELAYQ_CONFIG); "" for none.
std::pair<std::string, bool> settings_path() {
  const auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v != nullptr ? v : "";
  };
  if (std::string named = env("DELAYQ_CONFIG"); !named.empty()) return {named, true};
  std::string base = env("XDG_CONFIG_HOME");
  if (base.empty()) {
    const std::string home = env("HOME");
    if (home.empty()) return {"", false};
    base = home + "/.config";
  }
  return {base + "/delayq/cli.conf", false};
}

}  // namespace

Result<Settings> read_settings() {
  const auto [path, required] = settings_path();
  Settings s;
  if (path.empty()) return s;
  std::ifstream in(path);
  if (!in) {
    if (!required && errno == ENOENT) return s;
    return Status(Errc::invalid_argument, "cannot read the settings file " + path +
                                              (required ? " (named by DELAYQ_CONFIG)" : "") +
                                              ": " + std::strerror(errno));
  }
  s.path = path;
  constexpr std::array<std::string_view, 3> kNames = {"url", "token-file", "redis-password-file"};
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string where = path + ":" + std::to_string(n);
    const auto bad = [&](const std::string& why) {
      return Status(Errc::invalid_argument, "settings file " + where + ": " + why);
    };
    const std::string_view t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    const size_t eq = t.find('=');
    if (eq == std::string_view::npos)
      return bad("expected 'name = value', got '" + std::string(t) + "'");
    const std::string name(trim(t.substr(0, eq)));
    std::string value(trim(t.substr(eq + 1)));
    std::optional<std::string>* slot = name == "url"          ? &s.url
                                       : name == "token-file" ? &s.token_file
                                       : name == "redis-password-file" ? &s.redis_password_file
                                                                       : nullptr;
    if (slot == nullptr) {
      const std::string_view best = wire::closest_name(name, kNames);
      return bad("unknown setting '" + name + "'" +
                 (best.empty() ? "" : " (did you mean '" + std::string(best) + "'?)") +
                 "; it may set url, token-file and redis-password-file");
    }
    if (value.empty()) return bad("setting '" + name + "' has no value");
    if (slot->has_value()) return bad("setting '" + name + "' given twice");
    if (name != "url" && fs::path(value).is_relative())
      value = (fs::path(path).parent_path() / value).string();
    *slot = std::move(value);
    (name == "url"          ? s.url_source
     : name == "token-file" ? s.token_source
                            : s.redis_password_source) = name + " in " + where;
  }
  return s;
}

}  // namespace delayq::cli
