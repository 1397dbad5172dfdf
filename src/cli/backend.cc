// The CLI's backends (see backend.h): a Queue (store or Redis) and delayqd over HTTP.
#include "cli/backend.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/http_client.h"
#include "delayq/queue.h"
#include "delayq/redis.h"
#include "delayq/store.h"
#include "wire/json.h"
#include "wal/lock.h"

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

Result<std::unique_ptr<Backend>> open_redis_backend(const Target& t) {
  RedisOptions options;
  options.url = t.redis_url;
  if (!t.queue.empty()) options.queue = t.queue;
  if (t.shards != 0) options.shards = t.shards;
  options.connections = 1;  // one command at a time
  auto q = open_redis(options);
  if (!q) return q.status();
  return std::unique_ptr<Backend>(new QueueBackend(std::move(*q)));
}

// ---- delayqd over HTTP -----------------------------------------------------------------------

// The Errc of an error word in delayqd's answer: an Errc's own name, or one of the words only the
// daemon uses (HTTP-level refusals); unavailable for any other.
Errc errc_from_name(std::string_view name) {
  static constexpr std::pair<std::string_view, Errc> kDaemonWords[] = {
      {"bad_request", Errc::invalid_argument}, {"bad_json", Errc::invalid_argument},
      {"too_large", Errc::invalid_argument},   {"overloaded", Errc::unavailable},
      {"shutting_down", Errc::unavailable},
      {"forbidden", Errc::invalid_argument},      // /backup without --backup-dir
      {"not_supported", Errc::invalid_argument},  // /backup of a Redis queue
  };
  for (const auto& [n, e] : kDaemonWords)
    if (n == name) return e;
  const Result<Errc> e = parse_errc(name);
  return e.ok() && *e != Errc::ok ? *e : Errc::unavailable;
}

TimePoint from_ms(int64_t ms) {
  return TimePoint(milliseconds(ms));
}

int64_t member_int(const json::Value& v, std::string_view key) {
  const json::Value* m = v.find(key);
  return m != nullptr && m->is_int() ? m->as_int() : 0;
}

std::string member_string(const json::Value& v, std::string_view key) {
  const json::Value* m = v.find(key);
  return m != nullptr && m->is_string() ? m->as_string() : std::string();
}

JobInfo job_from_json(const json::Value& v) {
  JobInfo j;
  j.id = member_string(v, "id");
  j.topic = member_string(v, "topic");
  const std::string state = member_string(v, "state");
  j.state = state == "ready"      ? JobState::ready
            : state == "reserved" ? JobState::reserved
            : state == "dead"     ? JobState::dead
                                  : JobState::delayed;
  j.attempts = static_cast<uint32_t>(member_int(v, "attempts"));
  j.max_attempts = static_cast<uint32_t>(member_int(v, "max_attempts"));
  j.due = from_ms(member_int(v, "due_ms"));
  j.lease_deadline = from_ms(member_int(v, "lease_deadline_ms"));
  j.ttr = milliseconds(member_int(v, "ttr_ms"));
  j.body = member_string(v, "body");
  return j;
}

int64_t to_ms(Duration d) {
  return duration_cast<milliseconds>(d).count();
}

// A duration as the daemon takes it: whole milliseconds exactly, anything finer in seconds.
void write_duration(json::Writer& w, std::string_view name, Duration d) {
  if (d % milliseconds(1) == Duration(0)) {
    w.key(std::string(name) + "_ms").value(to_ms(d));
  } else {
    w.key(name).value(duration_cast<duration<double>>(d).count());
  }
}

void write_retry(json::Writer& w, const RetryPolicy& p) {
  w.key("retry").begin_object();
  switch (p.kind) {
    case RetryPolicy::Kind::fixed:
      w.key("kind").value("fixed");
      write_duration(w, "delay", p.base);
      w.key("max_attempts").value(p.max_attempts);
      break;
    case RetryPolicy::Kind::list:
      w.key("kind").value("list").key("delays_ms").begin_array();
      for (Duration d : p.delays) w.value(to_ms(d));
      w.end_array().key("max_attempts").value(p.max_attempts);
      break;
    case RetryPolicy::Kind::exponential:
      w.key("kind").value("exponential");
      write_duration(w, "base", p.base);
      write_duration(w, "cap", p.cap);
      w.key("factor").value(p.factor).key("jitter").value(p.jitter);
      w.key("max_attempts").value(p.max_attempts);
      break;
  }
  w.end_object();
}

class HttpBackend final : public Backend {
 public:
  HttpBackend(HttpUrl url, std::string token) : url_(std::move(url)), token_(std::move(token)) {}

  Result<std::string> push(JobSpec spec) override {
    json::Writer w;
    w.begin_object().key("topic").value(spec.topic);
    if (!spec.id.empty()) w.key("id").value(spec.id);
    if (spec.delay) write_duration(w, "delay", *spec.delay);
    if (spec.due_at) {
      // Rounded up: a job must never be due earlier than asked.
      w.key("due_at_ms").value(ceil<milliseconds>(spec.due_at->time_since_epoch()).count());
    }
    if (spec.ttr != Duration(0)) write_duration(w, "ttr", spec.ttr);
    w.key("body").value(spec.body);
    if (spec.retry) write_retry(w, *spec.retry);
    w.end_object();
    auto data = call("POST", "/push", w.str());
    if (!data) return data.status();
    return member_string(*data, "id");
  }

  Result<JobInfo> get(const std::string& id) override {
    auto data = call("POST", "/get", id_body("id", id));
    if (!data) return data.status();
    // The ouqiang-compatible /get answers success with data null for an unknown id.
    if (data->is_null()) return Status(Errc::not_found, "no job with id '" + id + "'");
    return job_from_json(*data);
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
    Stats s;
    s.pushed = member_int(*data, "pushed");
    s.delivered = member_int(*data, "delivered");
    s.acked = member_int(*data, "acked");
    s.retried = member_int(*data, "retried");
    s.dead_lettered = member_int(*data, "dead_lettered");
    s.leases_expired = member_int(*data, "leases_expired");
    s.cancelled = member_int(*data, "cancelled");
    s.requeued = member_int(*data, "requeued");
    s.purged = member_int(*data, "purged");
    if (const json::Value* topics = data->find("topics"); topics && topics->is_object()) {
      for (const auto& [name, t] : topics->as_object()) {
        TopicStats& ts = s.topics[name];
        ts.delayed = member_int(t, "delayed");
        ts.ready = member_int(t, "ready");
        ts.reserved = member_int(t, "reserved");
        ts.dead = member_int(t, "dead");
      }
    }
    return s;
  }

  Result<std::vector<JobInfo>> list_dead(const std::string& topic, size_t limit) override {
    json::Writer w;
    w.begin_object().key("topic").value(topic).key("limit").value(static_cast<uint64_t>(limit));
    w.end_object();
    auto data = call("POST", "/dead/list", w.str());
    if (!data) return data.status();
    std::vector<JobInfo> jobs;
    if (const json::Value* list = data->find("jobs"); list && list->is_array())
      for (const json::Value& j : list->as_array()) jobs.push_back(job_from_json(j));
    return jobs;
  }

  Status requeue_dead(const std::string& id) override {
    return call("POST", "/dead/requeue", id_body("id", id)).status();
  }
  Result<uint64_t> requeue_dead_topic(const std::string& topic) override {
    auto data = call("POST", "/dead/requeue", id_body("topic", topic));
    if (!data) return data.status();
    return static_cast<uint64_t>(member_int(*data, "requeued"));
  }
  Result<uint64_t> purge_dead(const std::string& topic) override {
    auto data = call("POST", "/dead/purge", id_body("topic", topic));
    if (!data) return data.status();
    return static_cast<uint64_t>(member_int(*data, "purged"));
  }
  Result<std::string> backup(const std::string& name) override {
    auto data = call("POST", "/backup", id_body("name", name));
    if (!data) return data.status();
    return member_string(*data, "dir");
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
    auto reply = http_request(url_, method, path, body, token_, seconds(60));
    if (!reply) return reply.status();
    auto doc = json::parse(reply->body, json::kReplyLimits);  // a long dead-letter list
    if (!doc || !doc->is_object()) {
      std::string text = reply->body.substr(0, 200);
      return Status(Errc::io_error, "HTTP " + std::to_string(reply->status) + " from " +
                                        std::string(path) +
                                        " with an answer that is not delayqd's JSON: " + text);
    }
    const json::Value* code = doc->find("code");
    if (code != nullptr && code->is_int() && code->as_int() == 0 && reply->status == 200) {
      const json::Value* data = doc->find("data");
      return data != nullptr ? *data : json::Value();
    }
    const std::string name = member_string(*doc, "error");
    std::string message = member_string(*doc, "message");
    if (name == "unauthorized")
      message = "delayqd refused the request (HTTP 401 unauthorized: " + message +
                "); give its bearer token with --token-file FILE";
    else if ((errc_from_name(name) == Errc::unavailable && name != "unavailable") ||
             name == "forbidden" || name == "not_supported")
      message =
          "delayqd answered HTTP " + std::to_string(reply->status) + " " + name + ": " + message;
    return Status(errc_from_name(name), message);
  }

  HttpUrl url_;
  std::string token_;
};

Result<std::string> read_token(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return Status(Errc::invalid_argument,
                  "cannot read --token-file " + path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string token = ss.str();
  const size_t b = token.find_first_not_of(" \t\r\n");
  const size_t e = token.find_last_not_of(" \t\r\n");
  token = b == std::string::npos ? "" : token.substr(b, e - b + 1);
  if (token.empty() || token.find_first_of(" \t\r\n") != std::string::npos)
    return Status(Errc::invalid_argument,
                  "--token-file " + path + " must hold one token (no spaces or line breaks)");
  return token;
}

}  // namespace

Result<std::unique_ptr<Backend>> open_backend(const Target& target, Access access) {
  if (!target.store_dir.empty()) return open_store_backend(target, access);
  if (!target.redis_url.empty()) return open_redis_backend(target);
  auto url = parse_http_url(target.url);
  if (!url) return url.status();
  std::string token;
  if (!target.token_file.empty()) {
    auto t = read_token(target.token_file);
    if (!t) return t.status();
    token = std::move(*t);
  }
  return std::unique_ptr<Backend>(new HttpBackend(std::move(*url), std::move(token)));
}

}  // namespace delayq::cli
