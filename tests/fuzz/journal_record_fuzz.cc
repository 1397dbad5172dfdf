// libFuzzer target: arbitrary bytes as one entry of the journal's "jobs" family, as a reopened
// store would read it from disk: the first 8 bytes are the key (the seq, big-endian), the rest
// the value. The value goes through decode_record() and, as the "totals" entry, through
// decode_totals() (wal/codec.h). A record that decodes must encode back to the very same bytes,
// and is then fed to Core::restore() and to the calls a recovered queue serves (advance, get,
// reserve, touch, nack, ack, dead letters) at instants before, at and long after its times.
//
// What it looks for: crashes, sanitizer reports (any undefined behaviour stops the run) and
// failed assertions in the decoders and in the core. decode_record() only checks structure, so
// the core must refuse, or live with, whatever a record that decodes holds: times at either end
// of the clock, a huge ttr, any retry policy. Build and run: scripts/fuzz.sh.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "engine/core.h"
#include "wal/codec.h"

namespace {

using delayq::Duration;
using delayq::Errc;
using delayq::TimePoint;
using delayq::engine::JobRecord;
using delayq::wal::decode_record;
using delayq::wal::decode_totals;
using delayq::wal::encode_record;
using delayq::wal::encode_totals;
using namespace std::chrono_literals;

// A fixed "now" (2024-01-01T00:00:00Z) keeps every run reproducible.
const TimePoint kNow{std::chrono::seconds(1704067200)};

void check_totals(std::string_view value) {
  delayq::Result<delayq::Stats> t = decode_totals(value);
  if (!t) {
    if (!t.status().is(Errc::corrupt)) std::abort();  // the decoder's only refusal
    return;
  }
  // It decodes, so it must round-trip: a version 1 value (nine totals, before `released`) as
  // version 2 with released 0, which is how the store writes it back.
  std::string expected(value);
  if (expected[0] == 1) {
    expected[0] = 2;
    expected.append(8, '\0');
  }
  if (encode_totals(*t) != expected) std::abort();
}

// What a recovered queue does with a restored record: every call a consumer or an operator
// could make, at instants around the record's own times.
void replay(JobRecord&& rec) {
  const std::string id = rec.id, topic = rec.topic;
  const TimePoint due = rec.due, lease = rec.lease_deadline;
  delayq::engine::Core core(delayq::engine::CoreOptions{}, kNow);
  if (!core.restore(std::move(rec), kNow).ok()) return;  // refused: nothing else to check
  const std::string topics[] = {topic};
  // The record's own times too (the wall clock may have stepped back since they were written).
  for (TimePoint t :
       {kNow, due, lease, kNow + 1s, kNow + 24h, kNow + std::chrono::hours(24 * 365 * 50)}) {
    core.advance(t);
    (void)core.next_deadline();
    (void)core.get(id, t);
    delayq::Result<delayq::Delivery> d = core.reserve(topics, t);
    if (d) {
      (void)core.touch(d->token, t);
      if (t == kNow) {
        (void)core.nack(d->token, std::nullopt, t);  // a failed attempt: the retry policy runs
      } else {
        (void)core.ack(d->token, t);
      }
    }
    (void)core.reschedule(id, t < TimePoint::max() - 1s ? t + 1s : t, t);
    (void)core.list_dead(topic, 10, t);
    (void)core.requeue_dead(id, t);
  }
  (void)core.purge_dead(topic, kNow + std::chrono::hours(24 * 365 * 60));
  (void)core.take_effects().changes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  uint64_t seq = 0;
  for (size_t i = 0; i < 8; ++i) seq = seq << 8 | (i < in.size() ? static_cast<uint8_t>(in[i]) : 0);
  const std::string_view value = in.substr(std::min<size_t>(8, in.size()));

  check_totals(value);
  delayq::Result<JobRecord> r = decode_record(seq, value);
  if (!r) {
    if (!r.status().is(Errc::corrupt)) std::abort();
    return 0;
  }
  if (encode_record(*r) != value) std::abort();  // decodes, so it must round-trip
  replay(std::move(r).value());
  return 0;
}
