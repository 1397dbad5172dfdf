// libFuzzer target: arbitrary bytes as what a Redis server answers (RESP), read by hiredis's
// reader as a connection reads them (parse_resp), then every reply through each of our readers
// of script and CLUSTER SLOTS replies (src/redis/script_replies.h) and the redirection parser,
// the way the Redis backend calls them: each reader gets the replies it could be handed.
//
// What it looks for: crashes and sanitizer reports (any undefined behaviour stops the run) in
// our reading of replies, whatever the server sent: wrong types, missing elements, numbers at
// either end of int64; slot maps with ranges outside 0..16383 or ports outside 1..65535; and a
// refusal that reads as a success.
// Build and run: scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "redis/resp.h"
#include "redis/script_replies.h"

namespace {

using namespace delayq::redis;

// A Redis server sends every element it announces, so hiredis may allocate an array as soon as
// it reads "*<count>". An input that announces more elements than it has bytes is not a reply a
// server could send; skipping it keeps huge allocations inside hiredis out of the findings.
bool announces_more_than_it_holds(std::string_view in) {
  for (size_t at = 0; (at = in.find('*', at)) != std::string_view::npos; ++at) {
    uint64_t n = 0;
    for (size_t i = at + 1; i < in.size() && in[i] >= '0' && in[i] <= '9' && n <= in.size(); ++i)
      n = n * 10 + static_cast<uint64_t>(in[i] - '0');
    if (n > in.size()) return true;
  }
  return false;
}

void check_slot_map(const Reply& r) {
  for (const SlotRange& s : read_slot_map(r))
    if (s.lo < 0 || s.hi > 16383 || s.lo > s.hi || s.port <= 0 || s.port > 65535) std::abort();
}

void read_script_reply(Reply r) {
  (void)code_of(r);
  (void)to_state(r.as_int(-1));
  (void)from_us(r.as_int());
  std::vector<Reply>& e = r.elements;
  (void)read_next_wait(e);
  // The reschedule's `when`, as the backend sends it: microseconds of a TimePoint.
  if (e.size() >= 2) (void)read_server_now(e[0].as_int() / 1000, e);
  delayq::Stats st;
  read_totals(r, st);
  for (const Reply& one : e) {
    (void)read_topic_counts(one);
    std::string host;
    int port = 0;
    (void)parse_address(one.str, host, port);
  }
  std::vector<Reply> copy = e;  // the readers below move strings out
  for (size_t i = 1; i + kJobInfoFields <= copy.size(); i += kJobInfoFields)
    (void)read_job_info(copy, i, "t");
  for (const Reply& one : e) (void)read_policy(one, 3);
  std::vector<delayq::Delivery> got;
  if (read_deliveries(e, &got) && got.size() != (e.size() - 1) / kDeliveryFields) std::abort();
}

// The typed outcomes of whole script replies, and the wording of every refusal for every kind
// of call about one job.
void read_outcomes(const Reply& r) {
  static const Rules rules(
      delayq::Limits{std::chrono::hours(24), 1024, std::chrono::seconds(30), {}});
  const delayq::Token token{"j", 1};
  for (ScriptId s : {kAck, kTouch, kCancel, kGet, kReschedule, kRequeueDead}) {
    delayq::Result<JobAnswer> a = read_job_answer(r, s);
    if (!a || !std::holds_alternative<Refusal>(*a)) continue;
    const int64_t when_us = r.elements.size() > 2 ? r.elements[2].as_int() : 0;
    const JobCall call{.script = s,
                       .id = "j",
                       .token = s == kAck || s == kTouch ? &token : nullptr,
                       .when = from_us(when_us),
                       .when_us = when_us,
                       .client_now = from_us(0)};
    if (refusal_status(std::get<Refusal>(*a), call, rules).ok()) std::abort();
  }
  (void)read_push(r);
  (void)read_push_many(r, r.elements.empty() ? 0 : r.elements.size() - 1);
  delayq::Result<Claimed> c = read_claim(r);
  if (c && !c->jobs.empty() && c->jobs.size() != (r.elements.size() - 1) / kDeliveryFields) std::abort();
  (void)read_ack_claim(r);
  (void)read_touch(r);
  (void)read_get(r);
  std::vector<delayq::JobInfo> dead;
  read_dead_list(r, "t", &dead);
  (void)read_dead_batch(r, kPurgeDead);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  if (announces_more_than_it_holds(in)) return 0;
  delayq::Result<std::vector<Reply>> replies = parse_resp(in);
  if (!replies) {
    if (!replies.status().is(delayq::Errc::corrupt)) std::abort();
    return 0;
  }
  for (const Reply& r : *replies) {
    check_slot_map(r);
    read_script_reply(r);
    read_outcomes(r);
    for (const Reply& inner : r.elements) read_script_reply(inner);
  }
  return 0;
}
