// delayqd: the delayq HTTP daemon. Reads its settings (config.h), opens the queue (the embedded
// durable store, or Redis), and runs the server until SIGTERM/SIGINT. docs/operations.md
// describes the flags; docs/http-api.md the routes.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "delayq/redis.h"
#include "delayq/store.h"
#include "delayqd/api.h"
#include "delayqd/config.h"
#include "delayqd/log.h"
#include "delayqd/notify.h"
#include "delayqd/server.h"

namespace {

using delayq::http::Config;
using delayq::http::log;
using delayq::http::LogLevel;

// The Redis queue, or nullptr after saying why not.
std::unique_ptr<delayq::Queue> open_redis_queue(const Config& c) {
  auto q = delayq::open_redis(c.redis_options);
  if (q) return std::move(*q);
  log(LogLevel::error, "cannot open the Redis queue: {}", q.status().to_string());
  if (q.status().message().find("AUTH") != std::string::npos)
    log(LogLevel::error,
        "delayqd reads the Redis password from --redis-password-file FILE, "
        "DELAYQ_REDIS_PASSWORD, or the redis url of its --config file");
  return nullptr;
}

// Tells systemd (Type=notify, NOTIFY_SOCKET set) that delayqd is ready or stopping; a failure
// is a warning, not a reason to stop serving.
void notify(const char* state) {
  if (std::string why = delayq::http::notify_service_manager(state); !why.empty())
    log(LogLevel::warn, "{}", why);
}

// The store, or nullptr after saying why not. With --backup-dir, POST /backup writes each backup
// to a new directory right under it (the Api checks the name).
std::unique_ptr<delayq::Queue> open_store_queue(Config& c) {
  auto q = delayq::open_store(c.store);
  if (!q) {
    log(LogLevel::error, "cannot open the store {}: {}", c.store.dir, q.status().to_string());
    if (q.is(delayq::Errc::unavailable))
      log(LogLevel::error,
          "one process at a time opens a store: stop the one that holds it (another delayqd?), "
          "or start this one with another --store");
    return nullptr;
  }
  if (!c.backup_dir.empty()) {
    c.api.backup = [store = q->get(),
                    root = c.backup_dir](const std::string& name) -> delayq::Result<std::string> {
      const std::string dir = (std::filesystem::absolute(root) / name).lexically_normal();
      if (delayq::Status st = delayq::backup_store(*store, dir); !st.ok()) return st;
      return dir;
    };
  }
  log(LogLevel::info, "store {} (sync {})", c.store.dir, delayq::to_string(c.store.sync));
  return std::move(*q);
}

}  // namespace

int main(int argc, char** argv) {
  Config c = delayq::http::read_config(argc, argv);
  std::unique_ptr<delayq::Queue> queue = c.redis ? open_redis_queue(c) : open_store_queue(c);
  if (!queue) return 1;

  const std::string& host = c.server.host;
  if (c.api.bearer_token.empty() && host != "127.0.0.1" && host != "::1" && host != "localhost")
    log(LogLevel::warn,
        "listening on {} without --token-file: anyone who can reach it can use the queue", host);

  delayq::http::Api api(*queue, c.api);
  std::string error;
  const bool ok = delayq::http::run_server(
      api, *queue, c.server,
      [](const std::string& where) {
        // On stdout, alone and without a time: scripts and tests read the port from it (with
        // --listen HOST:0). The log has it too, as every other event.
        std::cout << "delayqd: listening on " << where << std::endl;
        log(LogLevel::info, "listening on {}", where);
        // The queue is open and connections are taken from here on: systemd may start what
        // comes After= this unit.
        notify("READY=1");
      },
      error, [] { notify("STOPPING=1"); });
  queue->close();
  queue.reset();  // the store's last writes reach the disk here
  if (!ok) {
    log(LogLevel::error, "{}", error);
    return 1;
  }
  log(LogLevel::info, "stopped");
  return 0;
}
