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
#include "delayqd/notify.h"
#include "delayqd/server.h"

namespace {

using delayq::http::Config;

// The Redis queue, or nullptr after saying why not.
std::unique_ptr<delayq::Queue> open_redis_queue(const Config& c) {
  auto q = delayq::open_redis(c.redis_options);
  if (q) return std::move(*q);
  std::cerr << "delayqd: cannot open the Redis queue: " << q.status().to_string() << "\n";
  return nullptr;
}

// Tells systemd (Type=notify, NOTIFY_SOCKET set) that delayqd is ready or stopping; a failure
// is a warning, not a reason to stop serving.
void notify(const char* state) {
  if (std::string why = delayq::http::notify_service_manager(state); !why.empty())
    std::cerr << "delayqd: warning: " << why << "\n";
}

// The store, or nullptr after saying why not. With --backup-dir, POST /backup writes each backup
// to a new directory right under it (the Api checks the name).
std::unique_ptr<delayq::Queue> open_store_queue(Config& c) {
  auto q = delayq::open_store(c.store);
  if (!q) {
    std::cerr << "delayqd: cannot open the store " << c.store.dir << ": " << q.status().to_string()
              << "\n";
    if (q.is(delayq::Errc::unavailable))
      std::cerr << "delayqd: one process at a time opens a store: stop the one that holds it "
                   "(another delayqd?), or start this one with another --store\n";
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
  std::cerr << "delayqd: store " << c.store.dir << " (sync " << delayq::to_string(c.store.sync)
            << ")\n";
  return std::move(*q);
}

}  // namespace

int main(int argc, char** argv) {
  Config c = delayq::http::read_config(argc, argv);
  std::unique_ptr<delayq::Queue> queue = c.redis ? open_redis_queue(c) : open_store_queue(c);
  if (!queue) return 1;

  const std::string& host = c.server.host;
  if (c.api.bearer_token.empty() && host != "127.0.0.1" && host != "::1" && host != "localhost")
    std::cerr << "delayqd: warning: listening on " << host
              << " without --token-file: anyone who can reach it can use the queue\n";

  delayq::http::Api api(*queue, c.api);
  std::string error;
  const bool ok = delayq::http::run_server(
      api, *queue, c.server,
      [](const std::string& where) {
        // On stdout, alone: scripts and tests read the port from it (with --listen HOST:0).
        std::cout << "delayqd: listening on " << where << std::endl;
        // The queue is open and connections are taken from here on: systemd may start what
        // comes After= this unit.
        notify("READY=1");
      },
      error, [] { notify("STOPPING=1"); });
  queue->close();
  queue.reset();  // the store's last writes reach the disk here
  if (!ok) {
    std::cerr << "delayqd: " << error << "\n";
    return 1;
  }
  std::cerr << "delayqd: stopped\n";
  return 0;
}
