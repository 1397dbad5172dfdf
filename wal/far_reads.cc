// Reads of the disk tier (far_reads.h).
#include "wal/far_reads.h"

#include <memory>
#include <string>

#include <rocksdb/options.h>

#include "wal/codec.h"
#include "wal/far_codec.h"
#include "wal/open_db.h"

namespace delayq::wal {

Result<std::optional<engine::JobRecord>> find_far(Database& d, std::string_view id) {
  if (d.ids() == nullptr) return std::optional<engine::JobRecord>();
  std::string key, value;
  rocksdb::Status s = d.db().Get(rocksdb::ReadOptions(), d.ids(), rocksdb::Slice(id), &key);
  if (s.IsNotFound()) return std::optional<engine::JobRecord>();
  if (!s.ok()) return from_rocksdb(s, d.dir(), "reading family 'ids'");
  s = d.db().Get(rocksdb::ReadOptions(), d.far(), key, &value);
  auto damaged = [&](const std::string& why) {
    return Status(Errc::corrupt, "store " + d.dir() + ": family 'ids' maps job '" +
                                     std::string(id) + "' to far key " + hex(key) + ", " + why);
  };
  if (s.IsNotFound()) return damaged("which holds no record");
  if (!s.ok()) return from_rocksdb(s, d.dir(), "reading family 'far'");
  Result<engine::JobRecord> r = decode_far_record(key, value);
  if (!r) return damaged("whose record does not decode: " + r.status().message());
  if (r->id != id) return damaged("whose record is job '" + r->id + "'");
  return std::optional<engine::JobRecord>(std::move(r).value());
}

Status scan_far(Database& d, const engine::FarKey& from, const engine::FarKey& below,
                const std::function<bool(engine::JobRecord&&)>& fn,
                const std::function<Status(const Status&)>& on_damage) {
  if (d.far() == nullptr || !(from < below)) return Status();
  return for_each_in(d, d.far(), far_key(from), far_key(below), "scanning family 'far'",
                     [&](std::string_view k, std::string_view v) -> Result<bool> {
                       Result<engine::JobRecord> r = decode_far_record(k, v);
                       if (r) return fn(std::move(r).value());
                       const Status damage = store_damage(d, r.status());
                       if (!on_damage) return damage;
                       if (Status st = on_damage(damage); !st.ok()) return st;
                       return true;
                     });
}

void prefetch_far(Database& d, const engine::FarKey& from, const engine::FarKey& below, size_t n) {
  if (d.far() == nullptr || !(from < below)) return;
  (void)for_each_in(d, d.far(), far_key(from), far_key(below), "reading family 'far'",
                    [&n](std::string_view, std::string_view) -> Result<bool> { return --n > 0; });
}

Result<engine::FarKey> read_horizon(Database& d) {
  std::string value;
  rocksdb::Status s = d.db().Get(rocksdb::ReadOptions(), d.meta(), kHorizonKey, &value);
  if (s.IsNotFound()) return engine::FarKey{};
  if (!s.ok()) return from_rocksdb(s, d.dir(), "reading the horizon");
  Result<engine::FarKey> k = decode_horizon(value);
  if (!k) return store_damage(d, k.status());
  return k;
}

Result<std::optional<Duration>> read_horizon_span(Database& d) {
  std::string value;
  rocksdb::Status s = d.db().Get(rocksdb::ReadOptions(), d.meta(), kHorizonSpanKey, &value);
  if (s.IsNotFound()) return std::optional<Duration>();
  if (!s.ok()) return from_rocksdb(s, d.dir(), "reading the horizon span");
  Result<Duration> span = decode_span(value);
  if (!span) return store_damage(d, span.status());
  return std::optional<Duration>(*span);
}

Status write_horizon_span(Database& d, Duration span) {
  rocksdb::WriteOptions wo;
  wo.sync = true;
  rocksdb::Status s = d.db().Put(wo, d.meta(), kHorizonSpanKey, encode_span(span));
  if (!s.ok()) return from_rocksdb(s, d.dir(), "writing the horizon span");
  return Status();
}

Result<engine::TopicCounts> read_far_counts(Database& d) {
  engine::TopicCounts out;
  const std::string lower = kFarCountPrefix;
  std::string upper = lower;
  upper.back() = static_cast<char>(upper.back() + 1);  // the prefix's end: '/' + 1
  Status st = for_each_in(d, d.meta(), lower, upper, "reading the disk tier's counts",
                          [&](std::string_view k, std::string_view v) -> Result<bool> {
                            Result<uint64_t> n = decode_count(v);
                            if (!n) return store_damage(d, n.status());
                            out.emplace_back(std::string(k.substr(lower.size())), *n);
                            return true;
                          });
  if (!st.ok()) return st;
  return out;
}

}  // namespace delayq::wal
