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
  switch (static_cast<Errc>(code)) {
    case Errc::ok:
      return "ok";
    case Errc::invalid_argument:
      return "invalid_argument";
    case Errc::duplicate_id:
      return "duplicate_id";
    case Errc::not_found:
      return "not_found";
    case Errc::stale_token:
      return "stale_token";
    case Errc::invalid_state:
      return "invalid_state";
    case Errc::timeout:
      return "timeout";
    case Errc::closed:
      return "closed";
    case Errc::unavailable:
      return "unavailable";
    case Errc::io_error:
      return "io_error";
    case Errc::corrupt:
      return "corrupt";
    case Errc::cancelled:
      return "cancelled";
  }
  return "?";
}

Kind done_of(Kind intent) {
  switch (intent) {
    case Kind::push_intent:
      return Kind::push_done;
    case Kind::batch_intent:
      return Kind::batch_done;
    case Kind::reserve_intent:
      return Kind::reserve_done;
    case Kind::ack_intent:
      return Kind::ack_done;
    case Kind::nack_intent:
      return Kind::nack_done;
    case Kind::dead_intent:
      return Kind::dead_done;
    case Kind::touch_intent:
      return Kind::touch_done;
    case Kind::cancel_intent:
      return Kind::cancel_done;
    case Kind::resched_intent:
      return Kind::resched_done;
    case Kind::requeue_intent:
      return Kind::requeue_done;
    case Kind::purge_intent:
      return Kind::purge_done;
    default:
      return intent;
  }
}

bool is_intent(Kind k) {
  return done_of(k) != k;
}

bool is_token_call(Kind intent) {
  return intent == Kind::ack_intent || intent == Kind::nack_intent || intent == Kind::dead_intent ||
         intent == Kind::touch_intent;
}

const char* call_name(Kind intent) {
  switch (intent) {
    case Kind::push_intent:
      return "push";
    case Kind::batch_intent:
      return "push_batch";
    case Kind::reserve_intent:
      return "reserve";
    case Kind::ack_intent:
      return "ack";
    case Kind::nack_intent:
      return "nack";
    case Kind::dead_intent:
      return "dead_letter";
    case Kind::touch_intent:
      return "touch";
    case Kind::cancel_intent:
      return "cancel";
    case Kind::resched_intent:
      return "reschedule";
    case Kind::requeue_intent:
      return "requeue_dead";
    case Kind::purge_intent:
      return "purge_dead";
    default:
      return "?";
  }
}

}  // namespace delayq::crash
