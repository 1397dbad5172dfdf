// Journal over RocksDB (journal.h): the commit pipeline (commit_pipeline.h) writing into the
// database (database.h) through a sink that turns each group into one WriteBatch, and the reads
// of what was stored, in the byte layout of codec.h.
#include "wal/journal.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/status.h>
#include <rocksdb/write_batch.h>

#include "wal/backup.h"
#include "wal/codec.h"
#include "wal/database.h"
#include "wal/far_codec.h"
#include "wal/far_reads.h"
#include "wal/open_db.h"
#include "wal/paused.h"

namespace delayq::wal {

namespace {

// A failed write or sync is an io_error to the engine, whatever RocksDB called it.
Status write_failure(const rocksdb::Status& s, const std::string& dir, const std::string& what) {
  Status st = from_rocksdb(s, dir, what);
  return st.is(Errc::io_error) ? st : Status(Errc::io_error, st.message());
}

// The pipeline's groups, each as one WriteBatch: the job changes in "jobs", then the totals and
// counters in "meta".
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
    if (s.ok() && group.totals) s = batch_.Put(d_.meta(), kTotalsKey, encode_totals(*group.totals));
    if (s.ok() && group.counters)
      s = batch_.Put(d_.meta(), kCountersKey, encode_counters(*group.counters));
    rocksdb::WriteOptions wo;
    wo.sync = sync;
    if (s.ok()) s = d_.db().Write(wo, &batch_);
    if (s.ok() && d_.take_switch_failure())
      s = rocksdb::Status::IOError("syncing the log before RocksDB switched log files failed");
    if (s.ok()) return Status();
    return write_failure(s, d_.dir(),
                         "writing " + std::to_string(batch_.Count()) + " changes to the log");
  }

  // The disk tier's part of a group (far_codec.h): each job's key and id entry, in call order;
  // the counts as of the group's last call; the horizon.
  rocksdb::Status write_far(const Group& group) {
    rocksdb::Status s;
    for (auto c = group.far.begin(); s.ok() && c != group.far.end(); ++c) {
      s = c->record ? batch_.Put(d_.far(), c->key, *c->record) : batch_.Delete(d_.far(), c->key);
      if (s.ok())
        s = c->record ? batch_.Put(d_.ids(), c->id, c->key) : batch_.Delete(d_.ids(), c->id);
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

struct Journal::Impl {
  JournalOptions options;
  std::unique_ptr<Database> database;
  std::unique_ptr<RocksDbSink> sink;
  std::unique_ptr<CommitPipeline> pipeline;  // none when read-only

  ~Impl() {
    if (!pipeline) return;
    pipeline->close();
    if (pipeline->status().ok()) database->flush();  // a clean close
  }

  const std::string& dir() const { return database->dir(); }

  // Damage found in the store (`msg`): corrupt, or with tolerant reported (with what follows
  // from it, `consequence`) and passed over.
  Status damaged(const std::string& msg, const std::string& consequence = {}) {
    return damaged_as_said("store " + dir() + ": " + msg, consequence);
  }
  // The same for a message that names the store already.
  Status damaged_as_said(const std::string& msg, const std::string& consequence) {
    if (!options.tolerant) return Status(Errc::corrupt, msg);
    if (options.on_skip) options.on_skip(msg + consequence);
    return Status();
  }

  // meta/`key` read with `decode`; T{} when it is absent, or damaged and passed over.
  template <class T>
  Result<T> read_meta(const char* key, Result<T> (*decode)(std::string_view), const char* what,
                      const std::string& consequence) {
    std::string value;
    rocksdb::Status s = database->db().Get(rocksdb::ReadOptions(), database->meta(), key, &value);
    if (s.IsNotFound()) return T{};
    if (!s.ok()) return from_rocksdb(s, dir(), std::string("reading the ") + what);
    Result<T> r = decode(value);
    if (r.ok()) return r;
    if (Status st = damaged(r.status().message(), consequence); !st.ok()) return st;
    return T{};
  }
};

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

// The disk tier's part of a write, encoded (before the pipeline's lock), with how many disk-only
// jobs each topic gains or loses.
EncodedFar encode_far(const engine::FarBatch& far) {
  EncodedFar out;
  out.changes.reserve(far.changes.size());
  for (const engine::FarChange& c : far.changes) {
    EncodedFarChange e{far_key(engine::far_key(c.record)), c.record.id, std::nullopt};
    if (c.put) e.record = encode_record(c.record);
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
                                 const engine::Counters& counters, const engine::FarBatch& far) {
  Impl& m = *impl_;
  if (!m.pipeline)
    return Status(Errc::invalid_state, "store " + m.dir() + " is open read-only; write refused");
  if (!far.empty() && m.database->far() == nullptr)
    return Status(Errc::invalid_argument, "store " + m.dir() +
                                              " has no disk tier; a write to it was refused");
  // Encoded before the pipeline's lock.
  std::vector<EncodedChange> encoded;
  encoded.reserve(changes.size());
  for (const engine::Change& c : changes) {
    if (c.record && c.record->seq != c.seq)
      return Status(Errc::invalid_argument,
                    "journal write: change for seq " + std::to_string(c.seq) +
                        " carries a record with seq " + std::to_string(c.record->seq) +
                        "; nothing of the batch was written");
    encoded.push_back({c.seq, c.record ? std::optional(encode_record(*c.record)) : std::nullopt});
  }
  return m.pipeline->append(std::move(encoded), totals, counters,
                            far.empty() ? EncodedFar() : encode_far(far));
}

bool Journal::tiered() const {
  return impl_->database->far() != nullptr;
}

uint64_t Journal::written() const {
  return impl_->pipeline ? impl_->pipeline->written() : UINT64_MAX;
}

Result<std::optional<engine::JobRecord>> Journal::find_far(std::string_view id) {
  Result<std::optional<engine::JobRecord>> r = wal::find_far(*impl_->database, id);
  if (!r.is(Errc::corrupt)) return r;
  // Tolerant: the damage is reported, and the job taken as not there.
  if (Status st = impl_->damaged_as_said(r.status().message(), " (the job is taken as gone)");
      !st.ok())
    return st;
  return std::optional<engine::JobRecord>();
}

Status Journal::scan_far(const engine::FarKey& from, const engine::FarKey& below,
                         const std::function<bool(engine::JobRecord&&)>& fn) {
  return wal::scan_far(*impl_->database, from, below, fn, [this](const Status& damage) {
    return impl_->damaged_as_said(damage.message(), " (the job is skipped)");
  });
}

void Journal::prefetch_far(const engine::FarKey& from, const engine::FarKey& below, size_t n) {
  wal::prefetch_far(*impl_->database, from, below, n);
}

Result<engine::FarKey> Journal::horizon() {
  return read_horizon(*impl_->database);
}

Result<std::optional<Duration>> Journal::horizon_span() {
  return read_horizon_span(*impl_->database);
}

Status Journal::store_horizon_span(Duration span) {
  if (!impl_->pipeline)
    return Status(Errc::invalid_state, "store " + impl_->dir() + " is open read-only; write refused");
  return write_horizon_span(*impl_->database, span);
}

Result<engine::TopicCounts> Journal::far_counts() {
  Result<engine::TopicCounts> c = read_far_counts(*impl_->database);
  if (c && impl_->pipeline) impl_->pipeline->set_counts(*c);
  return c;
}

Result<uint64_t> Journal::append_paused(std::string_view topic, bool paused) {
  if (!impl_->pipeline)
    return Status(Errc::invalid_state,
                  "store " + impl_->dir() + " is open read-only; write refused");
  return impl_->pipeline->append_paused(std::string(topic), paused);
}

Result<std::vector<std::string>> Journal::paused_topics() {
  return read_paused(*impl_->database, [this](const Status& damage) {
    return impl_->damaged_as_said(damage.message(), " (the topic is taken as running)");
  });
}

Status Journal::sync_to(uint64_t ticket) {
  return impl_->pipeline ? impl_->pipeline->sync_to(ticket) : Status();
}

Status Journal::checkpoint(const std::string& dir) {
  Impl& m = *impl_;
  // A read-only journal has no lock: another process may be writing the store meanwhile.
  if (m.options.read_only)
    return Status(Errc::invalid_argument, "backup: store " + m.dir() +
                                              " is open read-only; back up a store opened for "
                                              "writing (it holds the lock, so the copy is whole)");
  return wal::checkpoint(m.database->db(), m.dir(), dir);
}

Result<Stats> Journal::totals() {
  Impl& m = *impl_;
  Result<Stats> t = m.read_meta<Stats>(kTotalsKey, decode_totals, "totals",
                                       " (the totals of stats() restart at zero)");
  if (t && m.pipeline) m.pipeline->set_totals(*t);
  return t;
}

Result<engine::Counters> Journal::counters() {
  Impl& m = *impl_;
  Result<engine::Counters> c = m.read_meta<engine::Counters>(
      kCountersKey, decode_counters, "counters",
      " (fences and generated ids restart from the wall clock, which repeats them if it stepped "
      "back)");
  if (c && m.pipeline) m.pipeline->set_counters(*c);
  return c;
}

Status Journal::scan(const std::function<Status(engine::JobRecord&&)>& fn) {
  Impl& m = *impl_;
  // Every key is 8 bytes, so [8 x 00, 8 x ff + 00) covers all of them, seq UINT64_MAX included.
  const std::string lower(kJobKeySize, '\0');
  const std::string upper = std::string(kJobKeySize, '\xff') + '\0';
  const rocksdb::Slice lower_slice(lower), upper_slice(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lower_slice;
  ro.iterate_upper_bound = &upper_slice;
  ro.fill_cache = false;  // a one-off pass over everything
  // The iterator must be gone before the bounds (and, at the latest, before the DB).
  std::unique_ptr<rocksdb::Iterator> it(m.database->db().NewIterator(ro, m.database->jobs()));

  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string_view k(it->key().data(), it->key().size());
    if (k.size() != kJobKeySize) {
      if (Status st = m.damaged("family 'jobs' holds a key of " + std::to_string(k.size()) +
                                " bytes (expected 8): " + hex(k.substr(0, 32)));
          !st.ok())
        return st;
      continue;
    }
    const rocksdb::Slice v = it->value();
    Result<engine::JobRecord> r = decode_record(job_seq(k), std::string_view(v.data(), v.size()));
    if (!r.ok()) {
      if (Status st = m.damaged(r.status().message()); !st.ok()) return st;
      continue;
    }
    if (Status st = fn(std::move(r).value()); !st.ok()) return st;
  }
  if (const rocksdb::Status& s = it->status(); !s.ok()) {
    Status st = from_rocksdb(s, m.dir(), "scanning family 'jobs'");
    // A damaged block of a table file: the records in it cannot be read, nor can it be known
    // which ones they are, so there is nothing to skip (tolerant or not).
    if (st.is(Errc::corrupt))
      return Status(Errc::corrupt, st.message() +
                                       "; the store cannot be read past it, even "
                                       "with tolerant: restore the directory from a "
                                       "backup");
    return st;
  }
  return Status();
}

}  // namespace delayq::wal
