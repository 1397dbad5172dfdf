// Records (record.h).
#include "record.h"

#include <algorithm>
#include <cstring>

namespace delayq::crash {

Record make_record(Kind kind, uint64_t job) {
  Record r;
  std::memset(&r, 0, sizeof r);
  r.kind = kind;
  r.job = job;
  return r;
}

Record done_record(Kind kind, const Record& intent, const Status& s, int64_t t1) {
  Record r = intent;
  r.kind = kind;
  r.code = static_cast<uint8_t>(s.ok() ? 0 : s.code().value());
  r.t1 = t1;
  std::memset(r.text, 0, sizeof r.text);
  if (!s.ok()) set_text(r, s.to_string());
  return r;
}

void set_text(Record& r, const std::string& s) {
  const size_t n = std::min(s.size(), sizeof r.text - 1);
  std::memcpy(r.text, s.data(), n);
  r.text[n] = '\0';
}

std::string text_of(const Record& r) {
  return std::string(r.text, strnlen(r.text, sizeof r.text));
}

const char* errc_text(uint8_t code) {
  return to_string(static_cast<Errc>(code));
}

namespace {

// Each call the worker reports: its intent, its outcome and its name.
struct CallKinds {
  Kind intent, done;
  const char* name;
};

constexpr CallKinds kCalls[] = {
    {Kind::push_intent, Kind::push_done, "push"},
    {Kind::batch_intent, Kind::batch_done, "push_batch"},
    {Kind::reserve_intent, Kind::reserve_done, "reserve"},
    {Kind::ack_intent, Kind::ack_done, "ack"},
    {Kind::nack_intent, Kind::nack_done, "nack"},
    {Kind::dead_intent, Kind::dead_done, "dead_letter"},
    {Kind::touch_intent, Kind::touch_done, "touch"},
    {Kind::release_intent, Kind::release_done, "release"},
    {Kind::cancel_intent, Kind::cancel_done, "cancel"},
    {Kind::resched_intent, Kind::resched_done, "reschedule"},
    {Kind::requeue_intent, Kind::requeue_done, "requeue_dead"},
    {Kind::purge_intent, Kind::purge_done, "purge_dead"},
    {Kind::ackb_intent, Kind::ackb_done, "ack_batch"},
    {Kind::rqtopic_intent, Kind::rqtopic_done, "requeue_dead_topic"},
    {Kind::pause_intent, Kind::pause_done, "pause"},
    {Kind::resume_intent, Kind::resume_done, "resume"},
    {Kind::limits_intent, Kind::limits_done, "set_topic_limits"},
    {Kind::list_intent, Kind::list_done, "list_jobs"},
    {Kind::sched_intent, Kind::sched_done, "schedule"},
    {Kind::unsched_intent, Kind::unsched_done, "unschedule"},
    {Kind::spause_intent, Kind::spause_done, "pause_schedule"},
    {Kind::sresume_intent, Kind::sresume_done, "resume_schedule"},
    {Kind::occ_intent, Kind::occ_done, "reserve and ack of an occurrence job"},
};

const CallKinds* call_of(Kind intent) {
  for (const CallKinds& c : kCalls)
    if (c.intent == intent) return &c;
  return nullptr;
}

}  // namespace

Kind done_of(Kind intent) {
  const CallKinds* c = call_of(intent);
  return c ? c->done : intent;
}

bool is_intent(Kind k) {
  return done_of(k) != k;
}

bool is_token_call(Kind intent) {
  return intent == Kind::ack_intent || intent == Kind::nack_intent || intent == Kind::dead_intent ||
         intent == Kind::touch_intent || intent == Kind::release_intent;
}

bool is_topic_call(Kind intent) {
  return intent == Kind::purge_intent || intent == Kind::rqtopic_intent ||
         intent == Kind::pause_intent || intent == Kind::resume_intent ||
         intent == Kind::limits_intent || intent == Kind::list_intent;
}

Record ack_of_batch(const Record& batch_intent, size_t i) {
  Record r = make_record(Kind::ack_intent, batch_intent.items[i]);
  r.thread = batch_intent.thread;
  r.t0 = batch_intent.t0;
  r.n = batch_intent.fences[i];
  return r;
}

Record ack_done_of_batch(const Record& batch_done, size_t i) {
  Record r = ack_of_batch(batch_done, i);
  r.kind = Kind::ack_done;
  r.code = batch_done.codes[i];
  r.t1 = batch_done.t1;
  if (r.code != 0) set_text(r, std::string("ack in ack_batch: ") + errc_text(r.code));
  return r;
}

const char* call_name(Kind intent) {
  const CallKinds* c = call_of(intent);
  return c ? c->name : "?";
}

}  // namespace delayq::crash
