// The journal's write side (journal.h): every call's changes come in through JournalSink (the
// engine's Persistence, journal_sink.h, at the end of this file), are checked and encoded by
// Journal::append (the byte layout of codec.h and far_codec.h) and queued on the commit pipeline
// (commit_pipeline.h), whose leader hands each group to RocksDbSink below: one WriteBatch, one
// RocksDB write. Opening is here too; what the journal reads is journal_reads.cc.
#include "wal/journal.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/status.h>
#include <rocksdb/write_batch.h>

#include "schedule/record.h"
#include "wal/codec.h"
#include "wal/database.h"
#include "wal/far_codec.h"
#include "wal/journal_impl.h"
#include "wal/journal_sink.h"
#include "wal/paused.h"
#include "wal/topic_limits.h"

namespace delayq::wal {

namespace {

// A failed write or sync is an io_error to the engine, whatever RocksDB called it.
Status write_failure(const rocksdb::Status& s, const std::string& dir, const std::string& what) {
  Status st = from_rocksdb(s, dir, what);
  return st.is(Errc::io_error) ? st : Status(Errc::io_error, st.message());
}

// The pipeline's groups, each as one WriteBatch: the job changes in "jobs", then the totals and
// counters in "meta" (and the format, when a record needs a higher one).
class RocksDbSink final : public CommitSink {
 public:
  explicit RocksDbSink(Database& d) : d_(d) {}

  Status write(const Group& group, bool sync) override {
    batch_.Clear();  // reused: the pipeline writes one group at a time
    // Put and Delete on a batch without a size limit only append bytes to it.
    rocksdb::Status s;
    for (auto c = group.changes.begin(); s.ok() && c != group.changes.end(); ++c)
      s = c->record ? batch_.Put(d_.jobs(), job_key(c->seq), *c->record)
                    : batch_.Delete(d_.jobs(), job_key(c->seq));
    if (s.ok()) s = write_far(group);
    for (auto p = group.paused.begin(); s.ok() && p != group.paused.end(); ++p)
      s = p->second ? batch_.Put(d_.meta(), paused_key(p->first), encode_paused())
                    : batch_.Delete(d_.meta(), paused_key(p->first));
    for (auto p = group.limits.begin(); s.ok() && p != group.limits.end(); ++p)
      s = p->second ? batch_.Put(d_.meta(), limits_key(p->first), *p->second)
                    : batch_.Delete(d_.meta(), limits_key(p->first));
    for (auto m = group.meta.begin(); s.ok() && m != group.meta.end(); ++m)
      s = m->second ? batch_.Put(d_.meta(), m->first, *m->second) : batch_.Delete(d_.meta(), m->first);
    if (s.ok() && group.totals) s = batch_.Put(d_.meta(), kTotalsKey, encode_totals(*group.totals));
    if (s.ok() && group.counters)
      s = batch_.Put(d_.meta(), kCountersKey, encode_counters(*group.counters));
    // The first record of a newer version raises the store's format in the same atomic write:
    // no moment where the store holds it under a format an older build would open.
    const bool raise = group.min_format > d_.format();
    if (s.ok() && raise) s = batch_.Put(d_.meta(), kFormatKey, encode_format(group.min_format));
    rocksdb::WriteOptions wo;
    wo.sync = sync;
    if (s.ok()) s = d_.db().Write(wo, &batch_);
    if (s.ok() && d_.take_switch_failure())
      s = rocksdb::Status::IOError("syncing the log before RocksDB switched log files failed");
    if (s.ok() && raise) d_.raised_to(group.min_format);
    if (s.ok()) return Status();
    return write_failure(s, d_.dir(),
                         "writing " + std::to_string(batch_.Count()) + " changes to the log");
  }

  // The disk tier's part of a group (far_codec.h): each job's key, id entry and index entry
  // (far_index.h), in call order; the counts as of the group's last call; the horizon.
  rocksdb::Status write_far(const Group& group) {
    rocksdb::Status s;
    for (auto c = group.far.begin(); s.ok() && c != group.far.end(); ++c) {
      s = c->record ? batch_.Put(d_.far(), c->key, *c->record) : batch_.Delete(d_.far(), c->key);
      if (s.ok())
        s = c->record ? batch_.Put(d_.ids(), c->id, c->key) : batch_.Delete(d_.ids(), c->id);
      if (s.ok())
        s = c->record ? batch_.Put(d_.far_topic(), c->topic_key, rocksdb::Slice())
                      : batch_.Delete(d_.far_topic(), c->topic_key);
    }
    for (auto n = group.counts.begin(); s.ok() && n != group.counts.end(); ++n)
      s = n->second != 0 ? batch_.Put(d_.meta(), far_count_key(n->first), encode_count(n->second))
                         : batch_.Delete(d_.meta(), far_count_key(n->first));
    if (s.ok() && group.horizon) s = batch_.Put(d_.meta(), kHorizonKey, *group.horizon);
    return s;
  }

  // Writes a tiny marker with sync=true: the log is on disk up to and including it.
  Status sync() override {
    rocksdb::WriteBatch marker;
    rocksdb::Status s = marker.Delete(d_.meta(), kSyncMarkerKey);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    if (s.ok()) s = d_.db().Write(wo, &marker);
    if (s.ok()) return Status();
    return write_failure(s, d_.dir(), "syncing the log to disk");
  }

 private:
  Database& d_;
  rocksdb::WriteBatch batch_;
};

}  // namespace

Journal::Journal(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Journal::~Journal() = default;

Result<std::unique_ptr<Journal>> Journal::open(const std::string& dir, const JournalOptions& o) {
  Result<std::unique_ptr<Database>> database = Database::open(dir, o);
  if (!database) return database.status();
  auto impl = std::make_unique<Impl>();
  impl->options = o;
  impl->database = std::move(database).value();
  if (!o.read_only) {
    impl->sink = std::make_unique<RocksDbSink>(*impl->database);
    impl->pipeline = std::make_unique<CommitPipeline>(*impl->sink, o.sync);
  }
  return std::unique_ptr<Journal>(new Journal(std::move(impl)));
}

Status Journal::write(const std::vector<engine::Change>& changes) {
  Result<uint64_t> ticket = append(changes);
  if (!ticket) return ticket.status();
  return sync_to(*ticket);
}

namespace {

// The least store format a record needs (codec.h), raised into `format`.
void needs(uint32_t& format, const engine::JobRecord& r) {
  if (needs_version_2(r)) format = std::max(format, kPriorityFormat);
}

// The disk tier's part of a write, encoded (before the pipeline's lock), with how many disk-only
// jobs each topic gains or loses; `format` raised as its records need.
EncodedFar encode_far(const engine::FarBatch& far, uint32_t& format) {
  EncodedFar out;
  out.changes.reserve(far.changes.size());
  for (const engine::FarChange& c : far.changes) {
    const engine::FarKey k = engine::far_key(c.record);
    EncodedFarChange e{far_key(k), c.record.id, far_topic_key(c.record.topic, k), std::nullopt};
    if (c.put) {
      e.record = encode_record(c.record);
      needs(format, c.record);
    }
    out.changes.push_back(std::move(e));
    const int64_t delta = c.put ? 1 : -1;
    auto it = std::find_if(out.count_deltas.begin(), out.count_deltas.end(),
                           [&](const auto& d) { return d.first == c.record.topic; });
    if (it == out.count_deltas.end())
      out.count_deltas.emplace_back(c.record.topic, delta);
    else
      it->second += delta;
  }
  if (far.horizon) out.horizon = encode_horizon(*far.horizon);
  return out;
}

}  // namespace

Result<uint64_t> Journal::append(const std::vector<engine::Change>& changes, const Stats& totals,
                                 const engine::Counters& counters, const engine::FarBatch& far,
                                 const std::vector<engine::MetaPut>& meta) {
  Impl& m = *impl_;
  if (!m.pipeline)
    return Status(Errc::invalid_state, "store " + m.dir() + " is open read-only; write refused");
  if (!far.empty() && m.database->far() == nullptr)
    return Status(Errc::invalid_argument, "store " + m.dir() +
                                              " has no disk tier; a write to it was refused");
  // Encoded before the pipeline's lock, noting the least store format the records need.
  std::vector<EncodedChange> encoded;
  encoded.reserve(changes.size());
  uint32_t format = 0;
  for (const engine::Change& c : changes) {
    if (c.record && c.record->seq != c.seq)
      return Status(Errc::invalid_argument,
                    "journal write: change for seq " + std::to_string(c.seq) +
                        " carries a record with seq " + std::to_string(c.record->seq) +
                        "; nothing of the batch was written");
    encoded.push_back({c.seq, c.record ? std::optional(encode_record(*c.record)) : std::nullopt});
    if (c.record) needs(format, *c.record);
  }
  EncodedFar encoded_far = far.empty() ? EncodedFar() : encode_far(far, format);
  // A schedule's record needs format 5: a build of 4 would keep it and never fire it.
  for (const engine::MetaPut& p : meta)
    if (p.value && std::string_view(p.key).starts_with(schedule::kSchedulePrefix))
      format = std::max(format, kScheduleFormat);
  return m.pipeline->append(std::move(encoded), totals, counters, std::move(encoded_far), format,
                            meta);
}

uint64_t Journal::written() const {
  return impl_->pipeline ? impl_->pipeline->written() : UINT64_MAX;
}

Result<uint64_t> Journal::append_paused(std::string_view topic, bool paused) {
  if (!impl_->pipeline)
    return Status(Errc::invalid_state,
                  "store " + impl_->dir() + " is open read-only; write refused");
  return impl_->pipeline->append_paused(std::string(topic), paused);
}

Result<uint64_t> Journal::append_limits(std::string_view topic,
                                        const std::optional<TopicLimits>& limits) {
  if (!impl_->pipeline)
    return Status(Errc::invalid_state,
                  "store " + impl_->dir() + " is open read-only; write refused");
  std::optional<std::string> value;
  if (limits) value = encode_limits(*limits);
  return impl_->pipeline->append_limits(std::string(topic), std::move(value));
}

Status Journal::sync_to(uint64_t ticket) {
  return impl_->pipeline ? impl_->pipeline->sync_to(ticket) : Status();
}

// ---- the engine's side: every call's changes come in here (journal_sink.h) ----

Result<uint64_t> JournalSink::write(const std::vector<engine::Change>& changes,
                                    const Stats& totals) {
  if (read_only_) return ++view_tickets_;
  return journal_->append(changes, totals, counters_now());
}

JournalSink::JournalSink(std::shared_ptr<Journal> journal, const engine::Counters& recorded,
                         bool read_only)
    : journal_(std::move(journal)), recorded_(recorded), read_only_(read_only) {}
JournalSink::~JournalSink() = default;

engine::FarStore* JournalSink::far() {
  return far_.get();
}

void JournalSink::give_tier(Duration span, uint64_t budget, const engine::FarKey& horizon,
                            engine::TopicCounts counts) {
  far_ = std::make_unique<FarSink>(*this, *journal_, span, budget, horizon, std::move(counts));
}

Result<uint64_t> JournalSink::write_far(const std::vector<engine::Change>& changes,
                                        const engine::FarBatch& far, const Stats& totals,
                                        const std::vector<engine::MetaPut>& meta) {
  if (read_only_) return ++view_tickets_;
  return journal_->append(changes, totals, counters_now(), far, meta);
}

Result<uint64_t> JournalSink::write_with_meta(const std::vector<engine::Change>& changes,
                                             const Stats& totals,
                                             const std::vector<engine::MetaPut>& meta) {
  if (read_only_) return ++view_tickets_;
  return journal_->append(changes, totals, counters_now(), {}, meta);
}

Result<uint64_t> JournalSink::write_paused(std::string_view topic, bool paused) {
  if (read_only_) return ++view_tickets_;
  return journal_->append_paused(topic, paused);
}

Result<uint64_t> JournalSink::write_limits(std::string_view topic,
                                          const std::optional<TopicLimits>& limits) {
  if (read_only_) return ++view_tickets_;
  return journal_->append_limits(topic, limits);
}

Status JournalSink::wait_durable(uint64_t ticket) {
  return read_only_ ? Status() : journal_->sync_to(ticket);
}

}  // namespace delayq::wal
