// What a journal reads (journal.h): what is stored, once at open (the records, totals,
// counters, paused topics), and live backups (backup.h). The write side is journal.cc; the disk
// tier's reads are journal_tier.cc.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>

#include "schedule/record.h"
#include "wal/backup.h"
#include "wal/codec.h"
#include "wal/journal_impl.h"
#include "wal/paused.h"
#include "wal/topic_limits.h"

namespace delayq::wal {

Result<std::vector<std::string>> Journal::paused_topics() {
  return read_paused(*impl_->database, [this](const Status& damage) {
    return impl_->damaged_as_said(damage.message(), " (the topic is taken as running)");
  });
}

Result<std::vector<std::pair<std::string, TopicLimits>>> Journal::topic_limits() {
  return read_limits(*impl_->database, [this](const Status& damage) {
    return impl_->damaged_as_said(damage.message(), " (the topic runs unlimited)");
  });
}

Result<std::vector<std::string>> Journal::schedules() {
  std::vector<std::string> out;
  Database& d = *impl_->database;
  // The keys from "schedule/" up to "schedule0" ('0' is the byte after '/').
  const std::string lower = schedule::kSchedulePrefix;
  const std::string upper = lower.substr(0, lower.size() - 1) + char(lower.back() + 1);
  Status st = for_each_in(d, d.meta(), lower, upper, "reading the schedules",
                          [&](std::string_view, std::string_view v) -> Result<bool> {
                            out.emplace_back(v);
                            return true;
                          });
  if (!st.ok()) return st;
  return out;
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
