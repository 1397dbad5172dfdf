// delayqd's settings, from its flags ("--name value" or "--name=value") and a config file
// (--config FILE: "name = value" lines, the flag names without "--"; flags given on the command
// line win). Every number is range-checked before anything is computed from it; a bad value, an
// unknown name or a setting given twice is refused naming the flag, or the file and line.
// docs/operations.md describes the settings.
#pragma once

#include <string>

#include "delayq/redis.h"
#include "delayq/store.h"
#include "delayqd/api.h"
#include "delayqd/server.h"

namespace delayq::http {

struct Config {
  ServerOptions server;
  ApiOptions api;  // without `backup`, which needs the opened store (delayqd_main.cc)
  // The queue: Redis (redis_options) when `redis`, else the embedded store (store).
  bool redis = false;
  RedisOptions redis_options;
  StoreOptions store;
  // --backup-dir: where POST /backup may write; empty when backups are off.
  std::string backup_dir;
};

// The settings of `argv`. --help prints the usage and exits 0; a bad flag or config line is
// reported on stderr and exits 2 (the exit statuses the usage names).
Config read_config(int argc, char** argv);

}  // namespace delayq::http
