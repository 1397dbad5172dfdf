// The CLI's targets as Queues (see target.h): a store, Redis, delayqd over HTTP (open_http).
#include "cli/target.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "client/http_queue.h"
#include "delayq/http.h"
#include "delayq/queue.h"
#include "delayq/redis.h"
#include "delayq/store.h"
#include "redis/connection.h"
#include "redis/keys.h"
#include "wal/lock.h"

namespace delayq::cli {

namespace {

Result<std::unique_ptr<Queue>> open_store_target(const Target& t, Access access) {
  std::error_code ec;
  if (access != Access::create && !std::filesystem::is_directory(t.store_dir, ec))
    return Status(Errc::io_error, "no store in " + t.store_dir + ": the directory does not exist");
  // A read-only RocksDB beside a running writer would see a moment of the store that the writer
  // may be deleting files from (and changes made since are missing): refuse, and point at the
  // daemon, which has the live queue. A writer could not open it anyway.
  if (const std::string holder = wal::lock_holder(t.store_dir); !holder.empty()) {
    return Status(Errc::unavailable,
                  "store directory " + t.store_dir + " is locked by " + holder +
                      "; the store can only be opened while no process has it open: if a "
                      "delayqd holds it, ask the daemon instead, with --url http://HOST:PORT");
  }
  StoreOptions options;
  options.dir = t.store_dir;
  options.read_only = access == Access::read;
  auto q = open_store(options);
  if (!q && q.is(Errc::unavailable))
    return Status(Errc::unavailable,
                  q.status().message() + "; if a delayqd serves it, use --url http://HOST:PORT");
  if (!q) return q.status();
  return std::unique_ptr<Queue>(std::move(*q));
}

// The shard count a Redis queue was created with, from its meta hash ("shards", which the first
// opening sets: redis_queue.cc); nothing when the queue is new, or the count cannot be read
// here (a server that does not answer, a Cluster node that does not hold the hash): then the
// opening itself says what is wrong.
std::optional<uint32_t> stored_shards(const RedisOptions& options) {
  auto ep = redis::parse_url(options.url, options.user, options.password);
  if (!ep) return std::nullopt;
  auto c = redis::Connection::open(*ep, options.connect_timeout, options.call_timeout);
  if (!c) return std::nullopt;
  const redis::KeyLayout keys(options.queue, 1);
  auto got = (*c)->call({"HGET", keys.meta(), "shards"});
  if (!got) return std::nullopt;
  const int64_t n = got->as_int(0);
  if (n < 1 || n > 1024) return std::nullopt;
  return static_cast<uint32_t>(n);
}

Result<std::unique_ptr<Queue>> open_redis_target(const Target& t) {
  RedisOptions options;
  options.url = t.redis_url;
  options.password = t.redis_password;
  if (!t.redis_password_file.empty()) {
    auto pw = redis::read_password_file(t.redis_password_file);
    if (!pw) return Status(Errc::invalid_argument, t.redis_password_source + ": " + pw.status().message());
    options.password = std::move(*pw);
  }
  if (!t.queue.empty()) options.queue = t.queue;
  if (t.shards != 0)
    options.shards = t.shards;
  else if (auto stored = stored_shards(options))
    options.shards = *stored;
  options.connections = 1;  // one command at a time
  options.replicas_to_ack = t.replicas_to_ack;
  options.replicas_timeout = std::chrono::milliseconds(t.replicas_timeout_ms);
  auto q = open_redis(options);
  if (!q && q.status().message().find("AUTH") != std::string::npos)
    return Status(Errc::invalid_argument,
                  q.status().message() + "; the CLI reads the password from a file named by "
                                         "--redis-password-file FILE, or DELAYQ_REDIS_PASSWORD");
  return q;
}

// The token in `path`; `source` names where the path came from (--token-file or
// DELAYQ_TOKEN_FILE) in the refusals.
Result<std::string> read_token(const std::string& path, const std::string& source) {
  std::ifstream in(path);
  if (!in)
    return Status(Errc::invalid_argument,
                  "cannot read " + source + " " + path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string token = ss.str();
  const size_t b = token.find_first_not_of(" \t\r\n");
  const size_t e = token.find_last_not_of(" \t\r\n");
  token = b == std::string::npos ? "" : token.substr(b, e - b + 1);
  if (token.empty() || token.find_first_of(" \t\r\n") != std::string::npos)
    return Status(Errc::invalid_argument,
                  source + " " + path + " must hold one token (no spaces or line breaks)");
  return token;
}

}  // namespace

Result<wire::HttpEndpoint> parse_url_flag(std::string_view text, std::string_view source) {
  auto url = wire::parse_http_url(text);
  if (url) return url;
  return Status(Errc::invalid_argument,
                "bad " + std::string(source) + " '" + std::string(text) + "': " + url.status().message() +
                    " (expected http://HOST:PORT, e.g. http://127.0.0.1:9277)");
}

Result<std::unique_ptr<Queue>> open_target(const Target& target, Access access) {
  if (!target.store_dir.empty()) return open_store_target(target, access);
  if (!target.redis_url.empty()) return open_redis_target(target);
  if (auto url = parse_url_flag(target.url, target.url_source); !url) return url.status();
  HttpOptions options;
  if (!target.token_file.empty()) {
    auto t = read_token(target.token_file, target.token_source);
    if (!t) return t.status();
    options.token = std::move(*t);
  }
  options.call_timeout = std::chrono::seconds(60);
  options.connections = 1;  // one command at a time
  options.user_agent = "delayq-cli";
  return open_http(target.url, options);
}

Result<Stats> stats_of(Queue& q) {
  if (auto* http = dynamic_cast<client::HttpQueue*>(&q)) return http->checked_stats();
  return q.stats();
}

Result<std::string> backup_of(Queue& q, const std::string& dir) {
  if (auto* http = dynamic_cast<client::HttpQueue*>(&q)) return http->backup(dir);
  auto* store = dynamic_cast<Engine*>(&q);
  if (store == nullptr)
    return Status(Errc::invalid_argument,
                  "a Redis queue is backed up by Redis itself (BGSAVE, or redis-cli --rdb FILE)");
  if (Status s = backup_store(*store, dir); !s.ok()) return s;
  std::error_code ec;
  return std::filesystem::absolute(dir, ec).lexically_normal().string();
}

Status with_cli_hint(Status s) {
  constexpr std::string_view kAsked = "; give its bearer token";
  const std::string& m = s.message();
  if (m.size() < kAsked.size() || m.compare(m.size() - kAsked.size(), kAsked.size(), kAsked) != 0)
    return s;
  return Status(static_cast<Errc>(s.code().value()),
                m + " with --token-file FILE (or DELAYQ_TOKEN_FILE)");
}

}  // namespace delayq::cli
