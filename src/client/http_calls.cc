// HttpQueue's calls that are one route each (see http_queue.h; the routes: docs/http-api.md).
#include <algorithm>
#include <chrono>
#include <string>

#include "client/http_queue.h"
#include "common/format.h"
#include "common/rules.h"
#include "wire/answer.h"
#include "common/flow_rules.h"
#include "wire/flow.h"
#include "wire/jobs.h"
#include "wire/spec.h"
#include "wire/stats.h"

namespace delayq::client {

namespace json = wire::json;
using namespace std::chrono;

namespace {

// delayqd's cap on the jobs of one /push_batch and the tokens of one /ack.
constexpr size_t kMaxBatch = 1000;
// /dead/list's largest limit; /stats's largest page.
constexpr size_t kMaxDeadList = 10000;
constexpr size_t kStatsPage = 10000;

// A duration as delayqd takes it: `ms_key` in whole milliseconds when it is whole milliseconds,
// else `s_key` in seconds.
void write_duration(json::Writer& w, std::string_view s_key, std::string_view ms_key, Duration d) {
  if (d % milliseconds(1) == Duration::zero())
    w.key(ms_key).value(static_cast<int64_t>(duration_cast<milliseconds>(d).count()));
  else
    w.key(s_key).value(duration<double>(d).count());
}

// One outcome of a batch's "results": ok, or the refusal it names.
Status outcome(const json::Value& r) {
  if (json::member_int(r, "code") == 0) return Status();
  return Status(wire::errc_of(json::member_string(r, "error")), json::member_string(r, "message"));
}

}  // namespace

// Refuses text that JSON would carry changed: bytes that are not UTF-8 arrive as U+FFFD, so an id
// could name another job.
Status text_only(std::string_view what, std::string_view text) {
  const size_t at = invalid_utf8_at(text);
  if (at == std::string_view::npos) return Status();
  return Status(Errc::invalid_argument,
                std::string(what) + " is not valid UTF-8 (byte " + std::to_string(at) +
                    " is not), and delayqd's JSON carries text only" +
                    (what == "body" ? ": encode a binary body as text (base64, hex)" : ""));
}

// {"key": value}, or the refusal of a value that is not text.
Result<std::string> one_member(std::string_view key, std::string_view value) {
  if (Status s = text_only(key, value); !s.ok()) return s;
  json::Writer w;
  w.begin_object().key(key).value(value).end_object();
  return w.take();
}

// rules::check_spec() with the client's limits; an empty id (the daemon makes one) passes.
Status HttpQueue::check(JobSpec& spec, TimePoint now) const {
  if (Status s = usable(); !s.ok()) return s;
  const bool generated = spec.id.empty();
  if (generated) spec.id = "-";
  Status s = rules::check_spec(spec, options_.limits, now);
  if (generated) spec.id.clear();
  if (!s.ok()) return s;
  // A due time in the past means now; sent as one, it could be before 1970 (refused).
  if (spec.due_at && *spec.due_at <= now) spec.due_at = now;
  if (Status t = text_only("id", spec.id); !t.ok()) return t;
  return text_only("body", spec.body);
}

Result<std::string> HttpQueue::push(JobSpec spec) {
  if (Status s = check(spec, SystemClock::instance().now()); !s.ok()) return s;
  json::Writer w;
  wire::write_spec_exact(w, spec);
  auto data = call("POST", "/push", w.str());
  if (!data) return data.status();
  return json::member_string(*data, "id");
}

std::vector<Result<std::string>> HttpQueue::push_batch(std::vector<JobSpec> specs) {
  std::vector<Result<std::string>> out(specs.size(), Result<std::string>(std::string()));
  const TimePoint now = SystemClock::instance().now();
  std::vector<size_t> sent;  // the specs that pass the client's checks, by index
  for (size_t i = 0; i < specs.size(); ++i) {
    if (Status s = check(specs[i], now); s.ok())
      sent.push_back(i);
    else
      out[i] = s;
  }
  for (size_t from = 0; from < sent.size(); from += kMaxBatch) {
    const size_t to = std::min(sent.size(), from + kMaxBatch);
    json::Writer w;
    w.begin_object().key("jobs").begin_array();
    for (size_t k = from; k < to; ++k) wire::write_spec_exact(w, specs[sent[k]]);
    w.end_array().end_object();
    auto data = call("POST", "/push_batch", w.str());
    const json::Value* results = data ? data->find("results") : nullptr;
    for (size_t k = from; k < to; ++k) {
      const size_t at = k - from;
      if (!data) {
        out[sent[k]] = data.status();
      } else if (results == nullptr || !results->is_array() || at >= results->as_array().size()) {
        out[sent[k]] = Status(Errc::io_error, "delayqd's /push_batch answer has no result for job " +
                                                  std::to_string(sent[k]));
      } else if (Status s = outcome(results->as_array()[at]); !s.ok()) {
        out[sent[k]] = s;
      } else {
        out[sent[k]] = json::member_string(results->as_array()[at], "id");
      }
    }
  }
  return out;
}

Status HttpQueue::settle(std::string_view path, const Token& token, std::optional<Duration> delay) {
  if (Status s = text_only("the token's id", token.id); !s.ok()) return s;
  json::Writer w;
  w.begin_object().key("token").value(token.to_string());
  if (delay) write_duration(w, "delay", "delay_ms", *delay);
  w.end_object();
  return call_status(path, w.str());
}

Status HttpQueue::ack(const Token& token) { return settle("/ack", token); }

std::vector<Status> HttpQueue::ack_batch(std::span<const Token> tokens) {
  // A token that JSON cannot carry is refused alone, as ack() refuses it.
  for (const Token& t : tokens)
    if (!text_only("id", t.id).ok()) return Queue::ack_batch(tokens);
  std::vector<Status> out;
  out.reserve(tokens.size());
  for (size_t from = 0; from < tokens.size(); from += kMaxBatch) {
    const size_t to = std::min(tokens.size(), from + kMaxBatch);
    json::Writer w;
    w.begin_object().key("tokens").begin_array();
    for (size_t k = from; k < to; ++k) w.value(tokens[k].to_string());
    w.end_array().end_object();
    auto data = call("POST", "/ack", w.str());
    const json::Value* results = data ? data->find("results") : nullptr;
    for (size_t k = from; k < to; ++k) {
      const size_t at = k - from;
      if (!data)
        out.push_back(data.status());
      else if (results == nullptr || !results->is_array() || at >= results->as_array().size())
        out.push_back(Status(Errc::io_error, "delayqd's /ack answer has no result for token " +
                                                 tokens[k].to_string()));
      else
        out.push_back(outcome(results->as_array()[at]));
    }
  }
  return out;
}

Status HttpQueue::nack(const Token& token, std::optional<Duration> delay) {
  if (Status s = usable(); !s.ok()) return s;
  if (Status s = rules::check_nack_delay(delay, options_.limits.max_delay); !s.ok()) return s;
  return settle("/nack", token, delay);
}

Status HttpQueue::dead_letter(const Token& token) { return settle("/dead_letter", token); }

Status HttpQueue::release(const Token& token) { return settle("/release", token); }

Result<TimePoint> HttpQueue::touch(const Token& token) {
  auto body = one_member("token", token.to_string());
  if (!body) return body.status();
  auto data = call("POST", "/touch", *body);
  if (!data) return data.status();
  return wire::read_time(*data, "lease_deadline");
}

Status HttpQueue::cancel(std::string_view id) {
  auto body = one_member("id", id);
  if (!body) return body.status();
  auto data = call("POST", "/delete", *body);
  if (!data) return data.status();
  // /delete is idempotent for ouqiang clients: a job that was not there answers deleted false.
  const json::Value* deleted = data->find("deleted");
  if (deleted != nullptr && deleted->is_bool() && !deleted->as_bool())
    return rules::no_such_job(id);
  return Status();
}

Result<JobInfo> HttpQueue::get(std::string_view id) {
  auto body = one_member("id", id);
  if (!body) return body.status();
  auto data = call("POST", "/get", *body);
  if (!data) return data.status();
  // /get answers success with data null for an unknown id, as ouqiang's does.
  if (data->is_null()) return rules::no_such_job(id);
  return wire::read_job(*data);
}

Status HttpQueue::reschedule(std::string_view id, TimePoint when) {
  if (Status s = usable(); !s.ok()) return s;
  const TimePoint now = SystemClock::instance().now();
  if (Status s = rules::check_new_due(when, now, options_.limits.max_delay); !s.ok()) return s;
  if (Status s = text_only("id", id); !s.ok()) return s;
  json::Writer w;
  w.begin_object().key("id").value(id);
  // The past means now (and a time before 1970 would be refused as negative).
  if (when <= now)
    w.key("delay_ms").value(0);
  else
    w.key("due_at_ns").value(static_cast<int64_t>(when.time_since_epoch().count()));
  w.end_object();
  return call_status("/reschedule", w.str());
}

Result<std::vector<JobInfo>> HttpQueue::list_dead(std::string_view topic, size_t limit) {
  if (Status s = usable(); !s.ok()) return s;
  std::vector<JobInfo> jobs;
  if (Status s = text_only("topic", topic); !s.ok()) return s;
  if (limit == 0) return jobs;
  json::Writer w;
  w.begin_object().key("topic").value(topic);
  w.key("limit").value(static_cast<uint64_t>(std::min(limit, kMaxDeadList))).end_object();
  auto data = call("POST", "/dead/list", w.str());
  if (!data) return data.status();
  if (const json::Value* list = data->find("jobs"); list && list->is_array())
    for (const json::Value& j : list->as_array()) jobs.push_back(wire::read_job(j));
  return jobs;
}

Status HttpQueue::requeue_dead(std::string_view id) {
  auto body = one_member("id", id);
  return body ? call_status("/dead/requeue", *body) : body.status();
}

// A call on a topic's dead letters that answers how many jobs it moved, as data.<count_key>.
Result<uint64_t> HttpQueue::dead_topic_call(std::string_view path, std::string_view topic,
                                            std::string_view count_key) {
  auto body = one_member("topic", topic);
  if (!body) return body.status();
  auto data = call("POST", path, *body);
  if (!data) return data.status();
  const json::Value* n = data->find(count_key);
  if (n == nullptr || !n->is_number() || n->as_int() < 0)
    return Status(Errc::unavailable, std::string(path) + ": the daemon's answer has no count of " +
                                         "jobs in data." + std::string(count_key));
  return static_cast<uint64_t>(n->as_int());
}

Result<uint64_t> HttpQueue::requeue_dead_topic(std::string_view topic) {
  return dead_topic_call("/dead/requeue", topic, "requeued");
}

Result<uint64_t> HttpQueue::purge_dead(std::string_view topic) {
  return dead_topic_call("/dead/purge", topic, "purged");
}

Status HttpQueue::pause(std::string_view topic) {
  auto body = one_member("topic", topic);
  return body ? call_status("/pause", *body) : body.status();
}

Status HttpQueue::resume(std::string_view topic) {
  auto body = one_member("topic", topic);
  return body ? call_status("/resume", *body) : body.status();
}

// The library's rules first (common/flow_rules.h), so that a bad value is refused without a
// request, in the same words as every backend.
Status HttpQueue::set_topic_limits(std::string_view topic, const TopicLimits& limits) {
  if (Status s = usable(); !s.ok()) return s;
  if (Status s = rules::check_topic_limits(topic, limits, options_.limits.max_delay); !s.ok())
    return s;
  if (Status s = text_only("topic", topic); !s.ok()) return s;
  json::Writer w;
  wire::write_limits_request(w, topic, limits);
  return call_status("/limits/set", w.str());
}

Status HttpQueue::clear_topic_limits(std::string_view topic) {
  auto body = one_member("topic", topic);
  return body ? call_status("/limits/clear", *body) : body.status();
}

Result<JobPage> HttpQueue::list_jobs(std::string_view topic, JobState state, size_t limit,
                                     std::string_view cursor) {
  if (Status s = usable(); !s.ok()) return s;
  if (Status s = rules::check_list_limit(limit); !s.ok()) return s;
  if (Status s = text_only("topic", topic); !s.ok()) return s;
  if (Status s = text_only("cursor", cursor); !s.ok()) return s;
  json::Writer w;
  w.begin_object().key("topic").value(topic).key("state").value(to_string(state));
  w.key("limit").value(static_cast<uint64_t>(limit));
  if (!cursor.empty()) w.key("cursor").value(cursor);
  w.end_object();
  auto data = call("POST", "/jobs/list", w.str());
  if (!data) return data.status();
  if (const json::Value* jobs = data->find("jobs"); jobs == nullptr || !jobs->is_array())
    return Status(Errc::unavailable, "/jobs/list: the daemon's answer has no \"jobs\" array");
  return wire::read_page(*data);
}

// Every page of /stats: the totals of the first, the topics of all of them.
Result<Stats> HttpQueue::fetch_stats(bool after_close) {
  Stats all;
  std::string after;
  for (bool first = true;; first = false) {
    json::Writer w;
    w.begin_object().key("limit").value(static_cast<uint64_t>(kStatsPage));
    if (!first) w.key("after").value(after);
    w.end_object();
    auto data = call("POST", "/stats", w.str(), Duration::zero(), -1, after_close);
    if (!data) return data.status();
    Stats page = wire::read_stats(*data);
    if (first)
      all = std::move(page);
    else
    {
      for (auto& [name, topic] : page.topics) all.topics.insert_or_assign(name, std::move(topic));
      for (auto& [name, t] : page.timing) all.timing.insert_or_assign(name, std::move(t));
    }
    const json::Value* truncated = data->find("truncated");
    if (truncated == nullptr || !truncated->is_bool() || !truncated->as_bool()) return all;
    std::string next = json::member_string(*data, "next_after");
    if (next.empty() || (!first && next <= after)) return all;  // no progress: stop
    after = std::move(next);
  }
}

Stats HttpQueue::stats() {
  if (fork_.forked()) return Stats{};
  // After close() too: the daemon's queue goes on (delayq/http.h).
  Result<Stats> s = fetch_stats(true);
  return s.ok() ? std::move(*s) : Stats{};
}

}  // namespace delayq::client
