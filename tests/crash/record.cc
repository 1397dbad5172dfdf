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
struct Call {
  Kind intent, done;
  const char* name;
};

constexpr Call kCalls[] = {
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
};

const Call* call_of(Kind intent) {
  for (const Call& c : kCalls)
    if (c.intent == intent) return &c;
  return nullptr;
}

}  // namespace

Kind done_of(Kind intent) {
  const Call* c = call_of(intent);
  return c ? c->done : intent;
}

bool is_intent(Kind k) {
  return done_of(k) != k;
}

bool is_token_call(Kind intent) {
  return intent == Kind::ack_intent || intent == Kind::nack_intent || intent == Kind::dead_intent ||
         intent == Kind::touch_intent || intent == Kind::release_intent;
}

const char* call_name(Kind intent) {
  const Call* c = call_of(intent);
  return c ? c->name : "?";
}

}  // namespace delayq::crash
