// What a delayq command line asks for, checked before anything is opened: the commands and their
// usage texts, the flags split from the arguments, the arguments each command takes, and the
// target (a store directory, a delayqd URL or Redis). docs/cli.md describes the commands.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/target.h"

namespace delayq::cli {

struct CommandInfo {
  const char* name;
  const char* usage;  // after "delayq TARGET "
  const char* summary;
  std::set<std::string> flags;  // command flags it takes (the target flags are always allowed)
  Access access;
};

// The command named `name` ("push", "dead list", "help"), or nullptr.
const CommandInfo* find_command(const std::string& name);
// Every command's usage and summary, the targets, the exit statuses.
std::string full_usage();
// "usage: delayq TARGET get ID\n".
std::string command_usage(const CommandInfo& c);
// One command's usage and summary, and the targets.
std::string command_help(const CommandInfo& c);

// A bad-usage exit: the message, then the usage line of the command when it is known.
struct UsageError {
  std::string message;
  const CommandInfo* command = nullptr;
};

struct Invocation {
  std::map<std::string, std::string> flags;
  std::vector<std::string> positional;
  bool json = false;
  bool help = false;
  bool version = false;  // --version
  // Once the command is known: its name ("dead list") and the arguments after it.
  std::string name;
  std::vector<std::string> rest;
};

// Splits flags from positional arguments. Keeps going after a problem so that the command (a
// positional argument) is known for the usage line; returns the first problem.
std::optional<UsageError> split_args(const std::vector<std::string>& args, Invocation& inv);

// The command's name from the positional arguments ("dead" and "schedule" take a subcommand),
// with the arguments after it in inv.rest. False when one of them comes without its subcommand.
bool take_command_name(Invocation& inv);

// Whether the flags apply to `command` and its arguments are the ones it takes.
std::optional<UsageError> check_args(const Invocation& inv, const CommandInfo& command);

// The one target the flags name, checked (a --url parsed, --shards counted). Without a target
// flag, DELAYQ_URL stands for --url; with a --url from either, DELAYQ_TOKEN_FILE stands for a
// --token-file not given (a flag wins over its variable). Under both, the settings file's url
// and token-file (settings_file.h).
std::optional<UsageError> read_target(const Invocation& inv, const CommandInfo& command,
                                      Target& target);

}  // namespace delayq::cli
