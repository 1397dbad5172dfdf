// The CLI's backends (see backend.h): a Queue (store or Redis) and delayqd over HTTP.
#include "cli/backend.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "delayq/queue.h"
#include "delayq/redis.h"
#include "delayq/store.h"
#include "redis/connection.h"
#include "redis/keys.h"
#include "wal/lock.h"
#include "wire/answer.h"
#include "wire/jobs.h"
#include "wire/json.h"
#include "wire/spec.h"
#include "wire/stats.h"

namespace delayq::cli {

namespace {

namespace json = delayq::wire::json;
using namespace std::chrono;

// ---- the Queue interface ---------------------------------------------------------------------

class QueueBackend final : public Backend {
 public:
  explicit QueueBackend(std::unique_ptr<Queue> q) : q_(std::move(q)) {}
  ~QueueBackend() override { q_->close(); }

  Result<std::string> push(JobSpec spec) override { return q_->push(std::move(spec)); }
  Result<JobInfo> get(const std::string& id) override { return q_->get(id); }
  Status cancel(const std::string& id) override { return q_->cancel(id); }
  Result<Stats> stats() override { return q_->stats(); }
  Result<std::vector<JobInfo>> list_dead(const std::string& topic, size_t limit) override {
    return q_->list_dead(topic, limit);
  }
  Status requeue_dead(const std::string& id) override { return q_->requeue_dead(id); }
  Result<uint64_t> requeue_dead_topic(const std::string& topic) override {
    return q_->requeue_dead_topic(topic);
  }
  Result<uint64_t> purge_dead(const std::string& topic) override { return q_->purge_dead(topic); }
  Status set_paused(const std::string& topic, bool paused) override {
    return paused ? q_->pause(topic) : q_->resume(topic);
  }
  Result<std::string> backup(const std::string& dir) override {
    auto* store = dynamic_cast<Engine*>(q_.get());
    if (store == nullptr)
      return Status(Errc::invalid_argument,
                    "a Redis queue is backed up by Redis itself (BGSAVE, or redis-cli --rdb FILE)");
    if (Status s = backup_store(*store, dir); !s.ok()) return s;
    std::error_code ec;
    return std::filesystem::absolute(dir, ec).lexically_normal().string();
  }

 private:
  std::unique_ptr<Queue> q_;
};

Result<std::unique_ptr<Backend>> open_store_backend(const Target& t, Access access) {
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
  if (!q) {
    if (q.is(Errc::unavailable))
      return Status(Errc::unavailable,
                    q.status().message() + "; if a delayqd serves it, use --url http://HOST:PORT");
    return q.status();
  }
  return std::unique_ptr<Backend>(new QueueBackend(std::move(*q)));
}

// The shard count a Redis queue was created with, from its meta hash ("shards", which the first
// opening sets: redis_queue.cc); nothing when the queue is new, or the count cannot be read
// here (a server that does not answer, a Cluster node that does not hold the hash): then the
// opening itself says what is wrong.
std::optional<uint32_t> stored_shards(const RedisOptions& options) {
  auto ep = redis::parse_url(options.url);
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

Result<std::unique_ptr<Backend>> open_redis_backend(const Target& t) {
  RedisOptions options;
  options.url = t.redis_url;
  if (!t.queue.empty()) options.queue = t.queue;
  if (t.shards != 0)
    options.shards = t.shards;
  else if (auto stored = stored_shards(options))
    options.shards = *stored;
  options.connections = 1;  // one command at a time
  auto q = open_redis(options);
  if (!q) return q.status();
  return std::unique_ptr<Backend>(new QueueBackend(std::move(*q)));
}

// ---- delayqd over HTTP -----------------------------------------------------------------------

class HttpBackend final : public Backend {
 public:
  HttpBackend(wire::HttpEndpoint url, std::string token)
      : client_(std::move(url), {.token = std::move(token), .user_agent = "delayq-cli"}) {}

  Result<std::string> push(JobSpec spec) override {
    json::Writer w;
    wire::write_spec(w, spec);
    auto data = call("POST", "/push", w.str());
    if (!data) return data.status();
    return json::member_string(*data, "id");
  }

  Result<JobInfo> get(const std::string& id) override {
    auto data = call("POST", "/get", id_body("id", id));
    if (!data) return data.status();
    // The ouqiang-compatible /get answers success with data null for an unknown id.
    if (data->is_null()) return Status(Errc::not_found, "no job with id '" + id + "'");
    return wire::read_job(*data);
  }

  Status cancel(const std::string& id) override {
    auto data = call("POST", "/delete", id_body("id", id));
    if (!data) return data.status();
    // /delete is idempotent for ouqiang clients; the CLI reports a missing job as the other
    // targets do.
    const json::Value* deleted = data->find("deleted");
    if (deleted != nullptr && deleted->is_bool() && !deleted->as_bool())
      return Status(Errc::not_found, "no job with id '" + id + "'");
    return Status();
  }

  Result<Stats> stats() override {
    auto data = call("GET", "/stats", "");
    if (!data) return data.status();
    return wire::read_stats(*data);
  }

  Result<std::vector<JobInfo>> list_dead(const std::string& topic, size_t limit) override {
    json::Writer w;
    w.begin_object().key("topic").value(topic).key("limit").value(static_cast<uint64_t>(limit));
    w.end_object();
    auto data = call("POST", "/dead/list", w.str());
    if (!data) return data.status();
    std::vector<JobInfo> jobs;
    if (const json::Value* list = data->find("jobs"); list && list->is_array())
      for (const json::Value& j : list->as_array()) jobs.push_back(wire::read_job(j));
    return jobs;
  }

  Status requeue_dead(const std::string& id) override {
    return call("POST", "/dead/requeue", id_body("id", id)).status();
  }
  Result<uint64_t> requeue_dead_topic(const std::string& topic) override {
    auto data = call("POST", "/dead/requeue", id_body("topic", topic));
    if (!data) return data.status();
    return static_cast<uint64_t>(json::member_int(*data, "requeued"));
  }
  Result<uint64_t> purge_dead(const std::string& topic) override {
    auto data = call("POST", "/dead/purge", id_body("topic", topic));
    if (!data) return data.status();
    return static_cast<uint64_t>(json::member_int(*data, "purged"));
  }
  Status set_paused(const std::string& topic, bool paused) override {
    return call("POST", paused ? "/pause" : "/resume", id_body("topic", topic)).status();
  }
  Result<std::string> backup(const std::string& name) override {
    auto data = call("POST", "/backup", id_body("name", name));
    if (!data) return data.status();
    return json::member_string(*data, "dir");
  }

 private:
  static std::string id_body(std::string_view key, const std::string& value) {
    json::Writer w;
    w.begin_object().key(key).value(value).end_object();
    return w.take();
  }

  // One route: the "data" member of a success, or the failure as a Status of the matching Errc.
  Result<json::Value> call(std::string_view method, std::string_view path,
                           const std::string& body) {
    auto reply = client_.request(method, path, body);
    if (!reply) return reply.status();
    std::optional<wire::Answer> answer = wire::read_answer(reply->body);
    if (!answer) {
      std::string text = reply->body.substr(0, 200);
      return Status(Errc::io_error, "HTTP " + std::to_string(reply->status) + " from " +
                                        std::string(path) +
                                        " with an answer that is not delayqd's JSON: " + text);
    }
    if (answer->ok() && reply->status == 200) return std::move(answer->data);
    const std::string& name = answer->error;
    const Errc errc = wire::errc_of(name);
    std::string message = answer->message;
    if (name == "unauthorized")
      message = "delayqd refused the request (HTTP 401 unauthorized: " + message +
                "); give its bearer token with --token-file FILE (or DELAYQ_TOKEN_FILE)";
    else if ((errc == Errc::unavailable && name != "unavailable") || name == "forbidden" ||
             name == "not_supported")
      message =
          "delayqd answered HTTP " + std::to_string(reply->status) + " " + name + ": " + message;
    return Status(errc, message);
  }

  wire::HttpClient client_;
};

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

Result<std::unique_ptr<Backend>> open_backend(const Target& target, Access access) {
  if (!target.store_dir.empty()) return open_store_backend(target, access);
  if (!target.redis_url.empty()) return open_redis_backend(target);
  auto url = parse_url_flag(target.url, target.url_source);
  if (!url) return url.status();
  std::string token;
  if (!target.token_file.empty()) {
    auto t = read_token(target.token_file, target.token_source);
    if (!t) return t.status();
    token = std::move(*t);
  }
  return std::unique_ptr<Backend>(new HttpBackend(std::move(*url), std::move(token)));
}

}  // namespace delayq::cli
