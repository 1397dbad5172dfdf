// The journal's RocksDB database (database.h).
#include "wal/database.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <utility>

#include <rocksdb/filter_policy.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/table_properties_collectors.h>

#include "wal/codec.h"
#include "wal/far_codec.h"
#include "wal/far_index.h"
#include "wal/lock.h"
#include "wal/open_db.h"

namespace delayq::wal {

namespace {

// CompactOnDeletionCollector: mark an SST file for compaction when any window of this many
// entries holds at least kDeletionTrigger tombstones, or when half of the file is tombstones.
// Acks delete from the old end of the key range in runs, which is what this catches.
constexpr size_t kDeletionWindow = 1024;
constexpr size_t kDeletionTrigger = 512;
constexpr double kDeletionRatio = 0.5;

rocksdb::DBOptions db_options(const JournalOptions& o) {
  rocksdb::DBOptions d;
  d.create_if_missing = !o.read_only;
  d.create_missing_column_families = !o.read_only;
  d.max_total_wal_size = o.max_total_wal_bytes;
  // One budget for the memtables of every family: RocksDB flushes the largest when they hold
  // more than this together (JournalOptions::memtable_bytes).
  d.db_write_buffer_size = o.memtable_bytes;
  // RocksDB's own LOG files: keep a few, not the default thousand.
  d.keep_log_file_num = 4;
  d.max_log_file_size = uint64_t{8} << 20;
  if (o.env != nullptr) d.env = o.env;
  // After a crash, replay the log into the memtable and leave it there: flushing it to a table
  // file first (RocksDB's default) would make the reopen wait for a write of everything in it.
  d.avoid_flush_during_recovery = true;
  return d;
}

// Families that take deletes in runs: compaction is asked to clear their tombstones.
rocksdb::ColumnFamilyOptions deleted_in_runs() {
  rocksdb::ColumnFamilyOptions o;
  o.table_properties_collector_factories.push_back(rocksdb::NewCompactOnDeletionCollectorFactory(
      kDeletionWindow, kDeletionTrigger, kDeletionRatio));
  return o;
}

// "ids" is read by point lookups that mostly miss (every push with the disk tier checks that its
// id is not on disk): bloom filters in the table files and in the memtable make a miss cheap.
rocksdb::ColumnFamilyOptions looked_up_by_id() {
  rocksdb::ColumnFamilyOptions o = deleted_in_runs();
  rocksdb::BlockBasedTableOptions t;
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  o.memtable_prefix_bloom_size_ratio = 0.02;
  o.memtable_whole_key_filtering = true;
  return o;
}

std::vector<rocksdb::ColumnFamilyDescriptor> families(const std::string& dir,
                                                      const rocksdb::DBOptions& d, bool tiered,
                                                      bool read_only) {
  std::vector<rocksdb::ColumnFamilyDescriptor> out = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
      {kJobsFamily, deleted_in_runs()},
      {kMetaFamily, rocksdb::ColumnFamilyOptions()},
  };
  // RocksDB refuses to open a store without naming every family it holds. A store written by a
  // newer format may hold families this build does not know: open them too (and leave them
  // alone), so that the format check can say what is wrong instead of RocksDB's "column
  // families not opened". A new store has nothing to list; that failure is not an error.
  std::vector<std::string> existing;
  (void)rocksdb::DB::ListColumnFamilies(d, dir, &existing);
  auto has = [&](const char* name) {
    return std::find(existing.begin(), existing.end(), name) != existing.end();
  };
  if (tiered || has(kFarFamily)) out.push_back({kFarFamily, deleted_in_runs()});
  if (tiered || has(kIdsFamily)) out.push_back({kIdsFamily, looked_up_by_id()});
  // The per-topic index of "far" (far_index.h): made with the tier, or for a store whose tier
  // predates it (the open builds it); a read-only open cannot make it, and reads without it.
  if (has(kFarTopicFamily) || (!read_only && (tiered || has(kFarFamily))))
    out.push_back({kFarTopicFamily, deleted_in_runs()});
  for (const std::string& name : existing)
    if (std::none_of(out.begin(), out.end(), [&](const auto& f) { return f.name == name; }))
      out.push_back({name, rocksdb::ColumnFamilyOptions()});
  return out;
}

// "Created if missing" (StoreOptions::dir) means the whole path, as `mkdir -p` would: RocksDB
// creates only the last component.
Status create_directory(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status(Errc::io_error, "cannot create the store directory " + dir + ": " + ec.message());
  return Status();
}

}  // namespace

Result<std::unique_ptr<Database>> Database::open(const std::string& dir, const JournalOptions& o) {
  std::unique_ptr<Database> d(new Database());
  if (!o.read_only) {
    if (Status st = create_directory(dir); !st.ok()) return st;
    // Before RocksDB is asked: a refused open must not touch what the holder has open (lock.h).
    Result<std::unique_ptr<StoreLock>> lock = StoreLock::take(dir);
    if (!lock) return lock.status();
    d->lock_ = std::move(lock).value();
  }
  d->dir_ = dir;
  rocksdb::DBOptions options = db_options(o);
  std::vector<rocksdb::ColumnFamilyDescriptor> fams = families(dir, options, o.tiered, o.read_only);
  for (rocksdb::ColumnFamilyDescriptor& f : fams) f.options.write_buffer_size = o.memtable_bytes;
  if (!o.read_only && o.sync.mode != Sync::always) {
    d->switch_sync_ = std::make_shared<LogSyncOnSwitch>();
    options.listeners.push_back(d->switch_sync_);
  }
  if (o.tune) o.tune(options, fams);
  // open_db() chooses how damage to RocksDB's write-ahead log is handled (and why), and puts the
  // log files it replayed on disk before anything builds on them (see log_files.h).
  OpenDbRequest request{.dir = dir,
                        .options = options,
                        .families = std::move(fams),
                        .read_only = o.read_only,
                        .tolerant = o.tolerant,
                        .on_skip = o.on_skip};
  if (Status st = open_db(request, &d->handles_, &d->db_); !st.ok()) return st;
  if (d->handles_.size() != request.families.size())
    return Status(Errc::io_error,
                  fmt::format("store {}: RocksDB opened {} column families, expected {}", dir,
                              d->handles_.size(), request.families.size()));
  if (d->switch_sync_) d->switch_sync_->attach(d->db_);
  for (rocksdb::ColumnFamilyHandle* h : d->handles_) {
    if (h->GetName() == kFarFamily) d->far_ = h;
    if (h->GetName() == kIdsFamily) d->ids_ = h;
    if (h->GetName() == kFarTopicFamily) d->far_topic_ = h;
  }
  if (Status st = d->check_format(o.read_only); !st.ok()) return st;
  return d;
}

// Reads meta/format; writes it on a new store, and raises it to 4 when the store has the disk
// tier, after building the tier's per-topic index (a store whose tier predates it: format 2 or
// 3); refuses a newer one. A store without the tier is not raised: format 3 (records with a
// priority) is the journal's to write, with the first such record, so that a store which never
// holds one stays readable by the builds of formats 1 and 2.
Status Database::check_format(bool read_only) {
  const uint32_t needed = far_ != nullptr ? kFarIndexFormat : 1;
  format_ = needed;
  auto write_format = [&]() -> Status {
    // The index first, then the format that says it is there: a crash in between leaves the old
    // format, and the next open builds the index again from the start.
    if (far_ != nullptr)
      if (Status st = build_far_index(*this); !st.ok()) return st;
    rocksdb::WriteOptions wo;
    wo.sync = true;
    rocksdb::Status w = db_->Put(wo, meta(), kFormatKey, encode_format(needed));
    if (!w.ok()) return from_rocksdb(w, dir_, "writing the format version");
    topic_index_ = far_topic_ != nullptr;
    return Status();
  };
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), meta(), kFormatKey, &value);
  if (s.IsNotFound()) {
    // A new store (or one whose creation was cut short before this write).
    if (read_only) return Status();
    return write_format();
  }
  if (!s.ok()) return from_rocksdb(s, dir_, "reading the format version");
  const std::optional<uint32_t> version = decode_format(value);
  if (!version)
    return Status(Errc::corrupt, "store " + dir_ +
                                     ": the format version in family 'meta' is "
                                     "unreadable (bytes: " +
                                     hex(value.substr(0, 32)) + ")");
  if (*version > kFormatVersion)
    return Status(Errc::corrupt,
                  fmt::format("store {} has format version {} (family 'meta', key 'format'), "
                              "newer than this build reads (format version {}); open it with a "
                              "newer delayq",
                              dir_, *version, kFormatVersion));
  if (*version < needed && !read_only) return write_format();
  format_ = std::max(*version, needed);
  // Read-only, a store of format 2 or 3 has no index to read: browsing falls back to the
  // bounded scan of "far" (tier_browse.cc).
  topic_index_ = far_topic_ != nullptr && *version >= kFarIndexFormat;
  return Status();
}

void Database::flush() {
  std::vector<rocksdb::ColumnFamilyHandle*> all = {jobs(), meta()};
  if (far_ != nullptr) all.insert(all.end(), {far_, ids_});
  if (far_topic_ != nullptr) all.push_back(far_topic_);
  (void)db_->Flush(rocksdb::FlushOptions(), all);
}

Database::~Database() {
  if (db_ == nullptr) return;
  if (switch_sync_) switch_sync_->attach(nullptr);
  for (rocksdb::ColumnFamilyHandle* h : handles_)
    if (h != nullptr) (void)db_->DestroyColumnFamilyHandle(h);
  handles_.clear();
  (void)db_->Close();
  delete db_;
}

// fn(key, value) for each key of `family` in [lower, upper), until fn returns false.
Status for_each_in(Database& d, rocksdb::ColumnFamilyHandle* family, const std::string& lower,
                   const std::string& upper, const char* what,
                   const std::function<Result<bool>(std::string_view, std::string_view)>& fn) {
  const rocksdb::Slice lo(lower), hi(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lo;
  ro.iterate_upper_bound = &hi;
  // The iterator must be gone before the bounds.
  std::unique_ptr<rocksdb::Iterator> it(d.db().NewIterator(ro, family));
  for (it->Seek(lo); it->Valid(); it->Next()) {
    Result<bool> more = fn(std::string_view(it->key().data(), it->key().size()),
                           std::string_view(it->value().data(), it->value().size()));
    if (!more) return more.status();
    if (!*more) return Status();
  }
  if (!it->status().ok()) return from_rocksdb(it->status(), d.dir(), what);
  return Status();
}

// A decoder's refusal (always corrupt), naming the store.
Status store_damage(const Database& d, const Status& s) {
  return Status(Errc::corrupt, "store " + d.dir() + ": " + s.message());
}

}  // namespace delayq::wal
