// The journal's disk tier (journal_tier.h) over the families' reads of far_reads.h.
#include "wal/journal_tier.h"

#include <string>

#include "wal/far_index.h"
#include "wal/far_reads.h"
#include "wal/journal_impl.h"

namespace delayq::wal {

bool JournalTier::present() const {
  return journal_.impl_->database->far() != nullptr;
}

Result<std::optional<engine::JobRecord>> JournalTier::find(std::string_view id) {
  Journal::Impl& m = *journal_.impl_;
  Result<std::optional<engine::JobRecord>> r = wal::find_far(*m.database, id);
  if (!r.is(Errc::corrupt)) return r;
  // Tolerant: the damage is reported, and the job taken as not there.
  if (Status st = m.damaged_as_said(r.status().message(), " (the job is taken as gone)");
      !st.ok())
    return st;
  return std::optional<engine::JobRecord>();
}

Status JournalTier::scan(const engine::FarKey& from, const engine::FarKey& below,
                         const std::function<bool(engine::JobRecord&&)>& fn) {
  Journal::Impl& m = *journal_.impl_;
  return wal::scan_far(*m.database, from, below, fn, [&m](const Status& damage) {
    return m.damaged_as_said(damage.message(), " (the job is skipped)");
  });
}

bool JournalTier::topic_index() const {
  return journal_.impl_->database->topic_index();
}

Status JournalTier::scan_topic(std::string_view topic, const engine::FarKey& from,
                               const engine::FarKey& below,
                               const std::function<bool(engine::JobRecord&&)>& fn) {
  Journal::Impl& m = *journal_.impl_;
  return wal::scan_far_topic(*m.database, topic, from, below, fn, [&m](const Status& damage) {
    return m.damaged_as_said(damage.message(), " (the job is skipped)");
  });
}

void JournalTier::prefetch(const engine::FarKey& from, const engine::FarKey& below, size_t n) {
  Journal::Impl& m = *journal_.impl_;
  wal::prefetch_far(*m.database, from, below, n);
}

Result<engine::FarKey> JournalTier::horizon() {
  Journal::Impl& m = *journal_.impl_;
  return read_horizon(*m.database);
}

Result<std::optional<Duration>> JournalTier::span() {
  Journal::Impl& m = *journal_.impl_;
  return read_horizon_span(*m.database);
}

Status JournalTier::store_span(Duration span) {
  Journal::Impl& m = *journal_.impl_;
  if (!m.pipeline)
    return Status(Errc::invalid_state, "store " + m.dir() + " is open read-only; write refused");
  return write_horizon_span(*m.database, span);
}

Result<engine::TopicCounts> JournalTier::counts() {
  Journal::Impl& m = *journal_.impl_;
  Result<engine::TopicCounts> c = read_far_counts(*m.database);
  if (c && m.pipeline) m.pipeline->set_counts(*c);
  return c;
}

}  // namespace delayq::wal
