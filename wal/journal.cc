// Journal over RocksDB. See journal.h for the contract and the layout.
//
// Record encoding (record version 1), all integers little-endian, fixed width:
//
//   u8  record version (1)
//   u64 seq               must equal the key's seq
//   u8  state             JobState, 0..3
//   i64 due               nanoseconds since the epoch
//   i64 lease_deadline    nanoseconds since the epoch
//   i64 ttr               nanoseconds
//   u32 attempts
//   u64 fence
//   str id                str = u32 byte count, then the bytes
//   str topic
//   str body
//   u8  retry.kind        RetryPolicy::Kind, 0..2
//   u32 retry.max_attempts
//   i64 retry.base        nanoseconds
//   u64 retry.factor      IEEE-754 bits of the double
//   i64 retry.cap         nanoseconds
//   u64 retry.jitter      IEEE-754 bits of the double
//   u32 retry.delays count, then that many i64 nanoseconds
//
// and nothing after. decode() checks every length against the bytes that are left before it
// reads or allocates, so any input (truncated, garbage, hostile) gives a value or Errc::corrupt.
// It checks structure only: whether the record makes sense to the engine (a valid policy, an id
// within limits) is for Core::restore() to judge.
//
// "meta"/"format" holds the store's format version as decimal text ("1").
#include "wal/journal.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/status.h>
#include <rocksdb/utilities/table_properties_collectors.h>
#include <rocksdb/write_batch.h>

#include "wal/backup.h"
#include "wal/open_db.h"

namespace delayq::wal {

namespace {

constexpr uint8_t kRecordVersion = 1;
constexpr const char* kJobsFamily = "jobs";
constexpr const char* kMetaFamily = "meta";
constexpr const char* kFormatKey = "format";
constexpr const char* kTotalsKey = "totals";
constexpr uint8_t kTotalsVersion = 1;
constexpr const char* kCountersKey = "counters";
constexpr uint8_t kCountersVersion = 1;
// Deleted with sync=true by sync_to(): a write that exists only to make the log durable.
constexpr char kSyncMarkerKey[] = "sync-marker";

// CompactOnDeletionCollector: mark an SST file for compaction when any window of this many
// entries holds at least kDeletionTrigger tombstones, or when half of the file is tombstones.
// Acks delete from the old end of the key range in runs, which is what this catches.
constexpr size_t kDeletionWindow = 1024;
constexpr size_t kDeletionTrigger = 512;
constexpr double kDeletionRatio = 0.5;

// ---- encoding -------------------------------------------------------------------------------

void put_u8(std::string& out, uint8_t v) { out.push_back(static_cast<char>(v)); }

void put_u32(std::string& out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out.append(b, 4);
}

void put_u64(std::string& out, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out.append(b, 8);
}

void put_i64(std::string& out, int64_t v) { put_u64(out, static_cast<uint64_t>(v)); }
void put_f64(std::string& out, double v) { put_u64(out, std::bit_cast<uint64_t>(v)); }

void put_str(std::string& out, const std::string& s) {
  // Strings past 4 GiB cannot be encoded; the engine's limits (255-byte ids and topics, a
  // configured body cap) keep records far below that.
  put_u32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

// Reads fields off the front of a byte string. Every read checks the bytes that are left; the
// first failure is remembered (with the field it was reading) and later reads do nothing.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  size_t left() const { return in_.size() - pos_; }

  void fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }

  uint8_t u8(const char* field) {
    uint8_t v = 0;
    if (take(1, field)) v = static_cast<uint8_t>(in_[pos_ - 1]);
    return v;
  }
  uint32_t u32(const char* field) {
    uint32_t v = 0;
    if (take(4, field))
      for (int i = 0; i < 4; ++i) v |= uint32_t{byte(pos_ - 4 + i)} << (8 * i);
    return v;
  }
  uint64_t u64(const char* field) {
    uint64_t v = 0;
    if (take(8, field))
      for (int i = 0; i < 8; ++i) v |= uint64_t{byte(pos_ - 8 + i)} << (8 * i);
    return v;
  }
  int64_t i64(const char* field) { return static_cast<int64_t>(u64(field)); }
  double f64(const char* field) { return std::bit_cast<double>(u64(field)); }
  Duration duration(const char* field) { return Duration(i64(field)); }
  TimePoint time_point(const char* field) { return TimePoint(Duration(i64(field))); }

  std::string str(const char* field) {
    const uint32_t n = u32(field);
    if (failed()) return {};
    if (n > left()) {
      fail(std::string("field '") + field + "' claims " + std::to_string(n) + " bytes but only " +
           std::to_string(left()) + " are left");
      return {};
    }
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }

 private:
  uint8_t byte(size_t i) const { return static_cast<uint8_t>(in_[i]); }

  bool take(size_t n, const char* field) {
    if (failed()) return false;
    if (left() < n) {
      fail(std::string("truncated in field '") + field + "' (needs " + std::to_string(n) +
           " bytes, " + std::to_string(left()) + " left)");
      return false;
    }
    pos_ += n;
    return true;
  }

  std::string_view in_;
  size_t pos_ = 0;
  std::string error_;
};

std::string key_of(uint64_t seq) {
  std::string k(8, '\0');
  for (int i = 0; i < 8; ++i) k[i] = static_cast<char>((seq >> (8 * (7 - i))) & 0xff);
  return k;
}

uint64_t seq_of(const rocksdb::Slice& k) {  // k.size() == 8
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(k[i]);
  return v;
}

std::string hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

// The "format" value: decimal digits, no sign, no padding beyond what fits in 32 bits.
bool parse_format(const std::string& text, uint32_t& out) {
  if (text.empty() || text.size() > 10) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > UINT32_MAX) return false;
  out = static_cast<uint32_t>(v);
  return true;
}

}  // namespace

// ---- the store -------------------------------------------------------------------------------

struct Journal::Impl {
  std::string dir;
  JournalOptions options;
  rocksdb::DB* db = nullptr;
  // As opened: [0] default, [1] jobs, [2] meta, then any families of a newer format. Destroyed
  // before the DB (Debian's RocksDB is built with assertions, and closing a DB with live
  // handles trips them).
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
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
    if (!options.read_only && broken.ok()) {
      // A clean close moves the memtable into a table file, so that the next open reads tables
      // instead of replaying the log (RocksDB does not flush on close while a log is kept).
      rocksdb::FlushOptions fo;
      (void)db->Flush(fo, {jobs, meta});
    }
    for (rocksdb::ColumnFamilyHandle* h : handles)
      if (h != nullptr) (void)db->DestroyColumnFamilyHandle(h);
    handles.clear();
    (void)db->Close();
    delete db;
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

  // Reads meta/format; writes it on a new store; refuses a newer one.
  Status check_format() {
    std::string value;
    rocksdb::Status s = db->Get(rocksdb::ReadOptions(), meta, kFormatKey, &value);
    if (s.IsNotFound()) {
      // A new store (or one whose creation was cut short before this write).
      if (options.read_only) return Status();
      rocksdb::WriteOptions wo;
      wo.sync = true;
      s = db->Put(wo, meta, kFormatKey, std::to_string(kFormatVersion));
      if (!s.ok()) return from_rocksdb(s, dir, "writing the format version");
      return Status();
    }
    if (!s.ok()) return from_rocksdb(s, dir, "reading the format version");
    uint32_t version = 0;
    if (!parse_format(value, version) || version == 0)
      return Status(Errc::corrupt, "store " + dir + ": the format version in family 'meta' is "
                                       "unreadable (bytes: " + hex(value.substr(0, 32)) + ")");
    if (version > kFormatVersion)
      return Status(Errc::corrupt,
                    "store " + dir + " has format version " + std::to_string(version) +
                        " (family 'meta', key 'format'), newer than this build reads (format "
                        "version " +
                        std::to_string(kFormatVersion) + "); open it with a newer delayq");
    return Status();
  }
};

Journal::Journal(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Journal::~Journal() = default;

Result<std::unique_ptr<Journal>> Journal::open(const std::string& dir, const JournalOptions& o) {
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->options = o;

  // "Created if missing" (StoreOptions::dir) means the whole path, as `mkdir -p` would:
  // RocksDB creates only the last component.
  if (!o.read_only) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      return Status(Errc::io_error,
                    "cannot create the store directory " + dir + ": " + ec.message());
  }
  rocksdb::DBOptions db_options;
  db_options.create_if_missing = !o.read_only;
  db_options.create_missing_column_families = !o.read_only;
  db_options.max_total_wal_size = o.max_total_wal_bytes;
  // RocksDB's own LOG files: keep a few, not the default thousand.
  db_options.keep_log_file_num = 4;
  db_options.max_log_file_size = uint64_t{8} << 20;
  if (o.env != nullptr) db_options.env = o.env;
  // After a crash, replay the log into the memtable and leave it there: flushing it to a table
  // file first (RocksDB's default) would make the reopen wait for a write of everything in it.
  db_options.avoid_flush_during_recovery = true;

  rocksdb::ColumnFamilyOptions jobs_options;
  jobs_options.table_properties_collector_factories.push_back(
      rocksdb::NewCompactOnDeletionCollectorFactory(kDeletionWindow, kDeletionTrigger,
                                                    kDeletionRatio));

  std::vector<rocksdb::ColumnFamilyDescriptor> families = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
      {kJobsFamily, jobs_options},
      {kMetaFamily, rocksdb::ColumnFamilyOptions()},
  };
  // RocksDB refuses to open a store without naming every family it holds. A store written by a
  // newer format may hold families this build does not know: open them too (and leave them
  // alone), so that the format check below can say what is wrong instead of RocksDB's "column
  // families not opened". A new store has nothing to list; that failure is not an error.
  std::vector<std::string> existing;
  if (rocksdb::DB::ListColumnFamilies(db_options, dir, &existing).ok())
    for (const std::string& name : existing)
      if (name != rocksdb::kDefaultColumnFamilyName && name != kJobsFamily && name != kMetaFamily)
        families.push_back({name, rocksdb::ColumnFamilyOptions()});

  // open_db() chooses how damage to RocksDB's write-ahead log is handled (and why).
  OpenDbRequest request{.dir = dir,
                        .options = db_options,
                        .families = std::move(families),
                        .read_only = o.read_only,
                        .tolerant = o.tolerant,
                        .on_skip = o.on_skip};
  if (Status st = open_db(request, &impl->handles, &impl->db); !st.ok()) return st;
  if (impl->handles.size() != request.families.size())
    return Status(Errc::io_error, "store " + dir + ": RocksDB opened " +
                                      std::to_string(impl->handles.size()) +
                                      " column families, expected " +
                                      std::to_string(request.families.size()));
  impl->jobs = impl->handles[1];
  impl->meta = impl->handles[2];

  if (Status f = impl->check_format(); !f.ok()) return f;
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
    const rocksdb::Status s = m.db->Write(wo, batch.get());
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
    items.emplace_back(key_of(c.seq), c.record ? std::optional(encode(*c.record)) : std::nullopt);
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

Status Journal::checkpoint(const std::string& dir) {
  Impl& m = *impl_;
  // A read-only journal has no lock: another process may be writing the store meanwhile.
  if (m.options.read_only)
    return Status(Errc::invalid_argument, "backup: store " + m.dir +
                                              " is open read-only; back up a store opened for "
                                              "writing (it holds the lock, so the copy is whole)");
  return wal::checkpoint(*m.db, m.dir, dir);
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

std::string Journal::encode_counters(const engine::Counters& c) {
  std::string out;
  put_u8(out, kCountersVersion);
  put_u64(out, c.fences);
  put_u64(out, c.next_id);
  return out;
}

Result<engine::Counters> Journal::decode_counters(std::string_view bytes) {
  Reader in(bytes);
  const uint8_t version = in.u8("version");
  if (!in.failed() && version != kCountersVersion)
    in.fail("version " + std::to_string(version) + ", expected " +
            std::to_string(kCountersVersion));
  engine::Counters c;
  c.fences = in.u64("fences");
  c.next_id = in.u64("next_id");
  if (!in.failed() && in.left() != 0) in.fail(std::to_string(in.left()) + " bytes after next_id");
  if (in.failed())
    return Status(Errc::corrupt, "the counters in family 'meta' are unreadable: " + in.error() +
                                     " (bytes: " + hex(bytes.substr(0, 32)) + ")");
  return c;
}

std::string Journal::encode_totals(const Stats& t) {
  std::string out;
  put_u8(out, kTotalsVersion);
  Stats copy = t;
  engine::for_each_total(copy, t, [&](uint64_t& v, uint64_t) { put_u64(out, v); });
  return out;
}

Result<Stats> Journal::decode_totals(std::string_view bytes) {
  Reader in(bytes);
  const uint8_t version = in.u8("version");
  if (!in.failed() && version != kTotalsVersion)
    return Status(Errc::corrupt, "the totals in family 'meta' have version " +
                                     std::to_string(version) + ", expected " +
                                     std::to_string(kTotalsVersion));
  Stats t;
  engine::for_each_total(t, t, [&](uint64_t& v, uint64_t) { v = in.u64("a total"); });
  if (!in.failed() && in.left() != 0)
    in.fail(std::to_string(in.left()) + " bytes after the last total");
  if (in.failed())
    return Status(Errc::corrupt, "the totals in family 'meta' are unreadable: " + in.error() +
                                     " (bytes: " + hex(bytes.substr(0, 32)) + ")");
  return t;
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
    if (k.size() != 8) {
      const std::string_view shown(k.data(), std::min<size_t>(k.size(), 32));
      if (Status st = bad("family 'jobs' holds a key of " + std::to_string(k.size()) +
                          " bytes (expected 8): " + hex(shown));
          !st.ok())
        return st;
      continue;
    }
    const uint64_t seq = seq_of(k);
    const rocksdb::Slice v = it->value();
    Result<engine::JobRecord> r = decode(seq, std::string_view(v.data(), v.size()));
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

std::string Journal::encode(const engine::JobRecord& r) {
  std::string out;
  out.reserve(1 + 8 + 1 + 8 * 3 + 4 + 8 + 12 + r.id.size() + r.topic.size() + r.body.size() + 1 +
              4 + 8 * 4 + 4 + 8 * r.retry.delays.size());
  put_u8(out, kRecordVersion);
  put_u64(out, r.seq);
  put_u8(out, static_cast<uint8_t>(r.state));
  put_i64(out, r.due.time_since_epoch().count());
  put_i64(out, r.lease_deadline.time_since_epoch().count());
  put_i64(out, r.ttr.count());
  put_u32(out, r.attempts);
  put_u64(out, r.fence);
  put_str(out, r.id);
  put_str(out, r.topic);
  put_str(out, r.body);
  put_u8(out, static_cast<uint8_t>(r.retry.kind));
  put_u32(out, r.retry.max_attempts);
  put_i64(out, r.retry.base.count());
  put_f64(out, r.retry.factor);
  put_i64(out, r.retry.cap.count());
  put_f64(out, r.retry.jitter);
  put_u32(out, static_cast<uint32_t>(r.retry.delays.size()));
  for (Duration d : r.retry.delays) put_i64(out, d.count());
  return out;
}

Result<engine::JobRecord> Journal::decode(uint64_t seq, std::string_view bytes) {
  auto corrupt = [seq](const std::string& why) {
    return Status(Errc::corrupt, "record seq " + std::to_string(seq) + " in family 'jobs': " + why);
  };
  Reader in(bytes);
  const uint8_t version = in.u8("record version");
  if (in.failed()) return corrupt("empty value");
  if (version != kRecordVersion)
    return corrupt("unknown record version " + std::to_string(version) + " (this build reads " +
                   std::to_string(kRecordVersion) + ")");

  engine::JobRecord r;
  r.seq = in.u64("seq");
  if (!in.failed() && r.seq != seq)
    in.fail("holds seq " + std::to_string(r.seq) + ", not its key's");
  const uint8_t state = in.u8("state");
  if (!in.failed() && state > static_cast<uint8_t>(JobState::dead))
    in.fail("state " + std::to_string(state) + " is not a JobState");
  r.state = static_cast<JobState>(state);
  r.due = in.time_point("due");
  r.lease_deadline = in.time_point("lease_deadline");
  r.ttr = in.duration("ttr");
  r.attempts = in.u32("attempts");
  r.fence = in.u64("fence");
  r.id = in.str("id");
  r.topic = in.str("topic");
  r.body = in.str("body");
  const uint8_t kind = in.u8("retry.kind");
  if (!in.failed() && kind > static_cast<uint8_t>(RetryPolicy::Kind::exponential))
    in.fail("retry kind " + std::to_string(kind) + " is not a RetryPolicy::Kind");
  r.retry.kind = static_cast<RetryPolicy::Kind>(kind);
  r.retry.max_attempts = in.u32("retry.max_attempts");
  r.retry.base = in.duration("retry.base");
  r.retry.factor = in.f64("retry.factor");
  r.retry.cap = in.duration("retry.cap");
  r.retry.jitter = in.f64("retry.jitter");
  const uint32_t n = in.u32("retry.delays count");
  if (!in.failed()) {
    if (n > in.left() / 8) {
      in.fail("retry.delays claims " + std::to_string(n) + " entries (" +
              std::to_string(uint64_t{n} * 8) + " bytes) but only " + std::to_string(in.left()) +
              " bytes are left");
    } else {
      r.retry.delays.reserve(n);
      for (uint32_t i = 0; i < n && !in.failed(); ++i)
        r.retry.delays.push_back(in.duration("retry.delays"));
    }
  }
  if (in.failed()) return corrupt(in.error());
  if (in.left() != 0)
    return corrupt(std::to_string(in.left()) + " unexpected bytes after the last field");
  return r;
}

}  // namespace delayq::wal
