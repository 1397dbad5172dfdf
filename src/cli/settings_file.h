// The CLI's settings file: where a daemon is and its token, so that `delayq` needs neither
// --url nor DELAYQ_URL on a machine that talks to one daemon (docs/cli.md, "Environment and
// settings file"). "name = value" lines, '#' comment lines, blank lines; the names are `url`,
// `token-file` and `redis-password-file` (a relative path is taken from the file's directory).
//
// Which file: DELAYQ_CONFIG when set (it must exist); else $XDG_CONFIG_HOME/delayq/cli.conf, or
// ~/.config/delayq/cli.conf without XDG_CONFIG_HOME, when that file exists.
#pragma once

#include <optional>
#include <string>

#include "delayq/error.h"

namespace delayq::cli {

struct Settings {
  std::string path;  // the file read; empty when there is none
  // Each value with where it was given ("url in FILE:LINE"), for messages.
  std::optional<std::string> url, token_file, redis_password_file;
  std::string url_source, token_source, redis_password_source;
};

// The settings file's values, or nothing set when there is no file. Errors (invalid_argument):
// a DELAYQ_CONFIG that cannot be read, a line that is not "name = value", an unknown name (with
// the closest known one), a name given twice or without a value.
Result<Settings> read_settings();

}  // namespace delayq::cli
