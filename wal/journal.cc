// Journal over RocksDB. See journal.h for the contract and the layout.
//
#include "wal/journal.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/status.h>
#include <rocksdb/write_batch.h>

#include "wal/codec.h"
#include "wal/database.h"
#include "wal/open_db.h"

namespace delayq::wal {

// ---- the store -------------------------------------------------------------------------------

struct Journal::Impl {
  std::string dir;
  JournalOptions options;
  std::unique_ptr<Database> database;
  rocksdb::DB* db = nullptr;  // database's
  rocksdb::ColumnFamilyHandle* jobs = nullptr;
  rocksdb::ColumnFamilyHandle* meta = nullptr;

  // The commit pipeline. Tickets number the appends: ticket n is the n-th append since open.
  // append() adds its changes to `pending` (in call order, under `mu`) and RocksDB has not seen
  // them yet. The first sync_to() that finds no write in flight becomes the leader: it takes
  // all of `pending` and writes it as one WriteBatch, while later appends gather in a fresh
  // `pending` for the next leader. So one RocksDB write (and, when synced, one fsync) covers
  // everyone who arrived while the previous one ran, and the engine's shard locks are never
  // held across a RocksDB write. The leader syncs its write with SyncMode::always, and with
  // batch when batch_ops appends are waiting for a sync. (Appending each call to RocksDB and
  // syncing with a separate marker write shared little: RocksDB never puts a synced write in a
  // group led by an unsynced one.)
  // batch and periodic: a background thread syncs the log every sync_interval with a tiny
  // synced marker write, which puts everything written before it on disk.
  std::mutex mu;
  std::condition_variable cv;        // waiters for a leader's write
  std::condition_variable syncer_cv;  // the background syncer's sleep (its own: a wake-up per
                                      // write would cost a context switch per call)
  std::unique_ptr<rocksdb::WriteBatch> pending = std::make_unique<rocksdb::WriteBatch>();
  std::unique_ptr<rocksdb::WriteBatch> spare = std::make_unique<rocksdb::WriteBatch>();
  uint64_t appended = 0;  // guarded by mu
  Stats totals;           // the stored totals plus every append's; guarded by mu
  bool totals_dirty = false;  // totals changed since the leader last stored them; mu
  engine::Counters counters;  // the highest counters stored or appended; guarded by mu
  bool counters_dirty = false;  // counters rose since the leader last stored them; mu
  bool writing = false;   // a leader's write is in flight; guarded by mu
  Status broken;          // a failed write or sync: every later call fails with it; mu
  std::atomic<uint64_t> written{0};  // tickets up to this one reached RocksDB (the OS)
  std::atomic<uint64_t> synced{0};   // tickets up to this one are on disk
  std::thread syncer;
  bool stopping = false;  // guarded by mu

  ~Impl() {
    if (db == nullptr) return;
    stop_syncer();
    flush_pending();
    if (!options.read_only && broken.ok()) database->flush();  // a clean close
  }

  Status failed(const rocksdb::Status& s, const std::string& what) {
    Status st = from_rocksdb(s, dir, what);
    // A failed write or sync is an io_error to the engine, whatever RocksDB called it.
    return st.is(Errc::io_error) ? st : Status(Errc::io_error, st.message());
  }

  // Under mu: the totals and counters as of the last append in `batch`, stored with it.
  void put_meta(rocksdb::WriteBatch& batch) {
    if (totals_dirty) (void)batch.Put(meta, kTotalsKey, encode_totals(totals));
    if (counters_dirty) (void)batch.Put(meta, kCountersKey, encode_counters(counters));
    totals_dirty = counters_dirty = false;
  }

  // Writes the tiny marker with sync=true: the log is on disk up to and including it.
  rocksdb::Status sync_marker() {
    rocksdb::WriteBatch marker;
    rocksdb::Status s = marker.Delete(meta, kSyncMarkerKey);
    if (!s.ok()) return s;
    rocksdb::WriteOptions wo;
    wo.sync = true;
    return db->Write(wo, &marker);
  }

  // Other modes: syncs the log and marks every append counted before the sync as durable.
  Status sync_now() {
    const uint64_t upto = written.load();
    if (rocksdb::Status s = sync_marker(); !s.ok()) {
      Status st = failed(s, "syncing the log to disk");
      std::lock_guard l(mu);
      if (broken.ok()) broken = st;
      return st;
    }
    uint64_t cur = synced.load();
    while (cur < upto && !synced.compare_exchange_weak(cur, upto)) {
    }
    return Status();
  }

  void start_syncer() {
    if (options.read_only ||
        (options.sync != SyncMode::batch && options.sync != SyncMode::periodic))
      return;
    syncer = std::thread([this] {
      std::unique_lock l(mu);
      while (!stopping) {
        syncer_cv.wait_for(l, options.sync_interval, [this] { return stopping; });
        if (stopping || !broken.ok() || synced.load() >= written.load()) continue;
        l.unlock();
        (void)sync_now();  // a failure is kept in `broken`
        l.lock();
      }
    });
  }

  void stop_syncer() {
    if (!syncer.joinable()) return;
    {
      std::lock_guard l(mu);
      stopping = true;
    }
    syncer_cv.notify_all();
    syncer.join();
    if (synced.load() < written.load()) (void)sync_now();
  }

  // Writes what was appended but never waited for (closing).
  void flush_pending() {
    std::unique_lock l(mu);
    cv.wait(l, [this] { return !writing; });
    if (pending->Count() == 0 || !broken.ok()) return;
    put_meta(*pending);
    rocksdb::WriteOptions wo;
    wo.sync = options.sync != SyncMode::none;
    (void)db->Write(wo, pending.get());
    pending->Clear();
  }
};

Journal::Journal(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Journal::~Journal() = default;

Result<std::unique_ptr<Journal>> Journal::open(const std::string& dir, const JournalOptions& o) {
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->options = o;
  Result<std::unique_ptr<Database>> database = Database::open(dir, o);
  if (!database) return database.status();
  impl->database = std::move(database).value();
  impl->db = &impl->database->db();
  impl->jobs = impl->database->jobs();
  impl->meta = impl->database->meta();
  impl->start_syncer();
  return std::unique_ptr<Journal>(new Journal(std::move(impl)));
}

Status Journal::write(const std::vector<engine::Change>& changes) {
  Result<uint64_t> ticket = append(changes);
  if (!ticket) return ticket.status();
  return sync_to(*ticket);
}

Status Journal::sync_to(uint64_t ticket) {
  Impl& m = *impl_;
  const bool wait_for_disk = m.options.sync == SyncMode::always;
  auto done = [&] { return (wait_for_disk ? m.synced : m.written).load() >= ticket; };
  if (done()) return Status();
  std::unique_lock l(m.mu);
  while (!done()) {
    if (!m.broken.ok()) return m.broken;
    if (m.writing) {
      m.cv.wait(l);
      continue;
    }
    // The leader: everything appended and not yet written is in `pending`.
    m.writing = true;
    m.put_meta(*m.pending);
    std::unique_ptr<rocksdb::WriteBatch> batch = std::move(m.pending);
    m.pending = std::move(m.spare);
    const uint64_t upto = m.appended;
    rocksdb::WriteOptions wo;
    wo.sync = wait_for_disk ||
              (m.options.sync == SyncMode::batch && upto - m.synced.load() >= m.options.batch_ops);
    l.unlock();
    rocksdb::Status s = m.db->Write(wo, batch.get());
    if (s.ok() && m.database->take_switch_failure())
      s = rocksdb::Status::IOError("syncing the log before RocksDB switched log files failed");
    const uint32_t count = batch->Count();
    batch->Clear();
    l.lock();
    m.spare = std::move(batch);
    m.writing = false;
    if (s.ok()) {
      m.written.store(upto);
      if (wo.sync) m.synced.store(upto);
    } else {
      // Every call waiting on this write, and every later one, fails: the engine stops, and
      // reopening shows what was kept. (RocksDB applies a batch whole or not at all, but after
      // a failed sync nobody can tell what reached the disk.)
      m.broken = m.failed(s, "writing " + std::to_string(count) + " changes to the log");
    }
    m.cv.notify_all();
  }
  return Status();
}

Result<uint64_t> Journal::append(const std::vector<engine::Change>& changes, const Stats& totals,
                                 const engine::Counters& counters) {
  Impl& m = *impl_;
  if (m.options.read_only)
    return Status(Errc::invalid_state, "store " + m.dir + " is open read-only; write refused");
  if (changes.empty()) return uint64_t{0};

  // Encoded before taking the lock.
  std::vector<std::pair<std::string, std::optional<std::string>>> items;
  items.reserve(changes.size());
  for (const engine::Change& c : changes) {
    if (c.record && c.record->seq != c.seq)
      return Status(Errc::invalid_argument,
                    "journal write: change for seq " + std::to_string(c.seq) +
                        " carries a record with seq " + std::to_string(c.record->seq) +
                        "; nothing of the batch was written");
    items.emplace_back(job_key(c.seq), c.record ? std::optional(encode_record(*c.record)) : std::nullopt);
  }
  std::lock_guard l(m.mu);
  if (!m.broken.ok()) return m.broken;
  engine::add_totals(m.totals, totals);
  m.totals_dirty = true;
  if (counters.fences > m.counters.fences || counters.next_id > m.counters.next_id) {
    m.counters.fences = std::max(m.counters.fences, counters.fences);
    m.counters.next_id = std::max(m.counters.next_id, counters.next_id);
    m.counters_dirty = true;
  }
  for (const auto& [key, value] : items) {
    // Put and Delete on a batch without a size limit only append bytes to it.
    rocksdb::Status s = value ? m.pending->Put(m.jobs, key, *value) : m.pending->Delete(m.jobs, key);
    if (!s.ok()) {
      m.broken = m.failed(s, "building a write batch");
      return m.broken;
    }
  }
  return ++m.appended;
}

Result<Stats> Journal::totals() {
  Impl& m = *impl_;
  std::string value;
  rocksdb::Status s = m.db->Get(rocksdb::ReadOptions(), m.meta, kTotalsKey, &value);
  Stats t;
  if (s.IsNotFound()) return t;
  if (!s.ok()) return from_rocksdb(s, m.dir, "reading the totals");
  Result<Stats> r = decode_totals(value);
  if (!r.ok()) {
    const std::string msg = "store " + m.dir + ": " + r.status().message();
    if (!m.options.tolerant) return Status(Errc::corrupt, msg);
    if (m.options.on_skip) m.options.on_skip(msg + " (the totals of stats() restart at zero)");
  } else {
    t = *r;
  }
  std::lock_guard l(m.mu);
  m.totals = t;
  return t;
}

Result<engine::Counters> Journal::counters() {
  Impl& m = *impl_;
  std::string value;
  rocksdb::Status s = m.db->Get(rocksdb::ReadOptions(), m.meta, kCountersKey, &value);
  engine::Counters c;
  if (s.IsNotFound()) return c;
  if (!s.ok()) return from_rocksdb(s, m.dir, "reading the counters");
  Result<engine::Counters> r = decode_counters(value);
  if (!r.ok()) {
    const std::string msg = "store " + m.dir + ": " + r.status().message();
    if (!m.options.tolerant) return Status(Errc::corrupt, msg);
    if (m.options.on_skip)
      m.options.on_skip(msg +
                        " (fences and generated ids restart from the wall clock, which "
                        "repeats them if it stepped back)");
  } else {
    c = *r;
  }
  std::lock_guard l(m.mu);
  m.counters = c;
  return c;
}

Status Journal::scan(const std::function<Status(engine::JobRecord&&)>& fn) {
  Impl& m = *impl_;
  // Every key is 8 bytes, so [8 x 00, 8 x ff + 00) covers all of them, seq UINT64_MAX included.
  const std::string lower(8, '\0');
  const std::string upper = std::string(8, '\xff') + '\0';
  const rocksdb::Slice lower_slice(lower), upper_slice(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lower_slice;
  ro.iterate_upper_bound = &upper_slice;
  ro.fill_cache = false;  // a one-off pass over everything
  // The iterator must be gone before the bounds (and, at the latest, before the DB).
  std::unique_ptr<rocksdb::Iterator> it(m.db->NewIterator(ro, m.jobs));

  auto bad = [&](std::string msg) -> Status {
    msg = "store " + m.dir + ": " + msg;
    if (m.options.tolerant) {
      if (m.options.on_skip) m.options.on_skip(msg);
      return Status();
    }
    return Status(Errc::corrupt, std::move(msg));
  };

  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const rocksdb::Slice k = it->key();
    if (k.size() != kJobKeySize) {
      const std::string_view shown(k.data(), std::min<size_t>(k.size(), 32));
      if (Status st = bad("family 'jobs' holds a key of " + std::to_string(k.size()) +
                          " bytes (expected 8): " + hex(shown));
          !st.ok())
        return st;
      continue;
    }
    const uint64_t seq = job_seq(std::string_view(k.data(), k.size()));
    const rocksdb::Slice v = it->value();
    Result<engine::JobRecord> r = decode_record(seq, std::string_view(v.data(), v.size()));
    if (!r.ok()) {
      if (Status st = bad(r.status().message()); !st.ok()) return st;
      continue;
    }
    if (Status st = fn(std::move(r).value()); !st.ok()) return st;
  }
  if (const rocksdb::Status& s = it->status(); !s.ok()) {
    Status st = from_rocksdb(s, m.dir, "scanning family 'jobs'");
    // A damaged block of a table file: the records in it cannot be read, nor can it be known
    // which ones they are, so there is nothing to skip (tolerant or not).
    if (st.is(Errc::corrupt))
      return Status(Errc::corrupt, st.message() + "; the store cannot be read past it, even "
                                                  "with tolerant: restore the directory from a "
                                                  "backup");
    return st;
  }
  return Status();
}

}  // namespace delayq::wal
