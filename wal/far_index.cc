// The disk tier's per-topic index (far_index.h).
#include "wal/far_index.h"

#include <fmt/format.h>

#include <string>

#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include "wal/codec.h"
#include "wal/far_codec.h"
#include "wal/open_db.h"

namespace delayq::wal {

namespace {

// Keys put per write batch while building: bounded memory whatever the size of "far".
constexpr size_t kBuildBatch = 4096;

}  // namespace

Status build_far_index(Database& d) {
  if (d.far() == nullptr || d.far_topic() == nullptr) return Status();
  rocksdb::WriteBatch batch;
  // Every key starts with a 4-byte length: five 0xff bytes are past any of them.
  rocksdb::Status s = batch.DeleteRange(d.far_topic(), "", std::string(5, '\xff'));
  size_t queued = 0;
  auto flush = [&]() -> Status {
    if (s.ok()) s = d.db().Write(rocksdb::WriteOptions(), &batch);
    if (!s.ok()) return from_rocksdb(s, d.dir(), "building the index of family 'far'");
    batch.Clear();
    queued = 0;
    return Status();
  };
  const std::string lower(kFarKeySize, '\0');
  const std::string upper(kFarKeySize + 1, '\xff');
  Status st = for_each_in(d, d.far(), lower, upper, "reading family 'far' to index it",
                          [&](std::string_view k, std::string_view v) -> Result<bool> {
                            Result<engine::JobRecord> r = decode_far_record(k, v);
                            if (!r) return true;  // not listed (far_index.h)
                            s = batch.Put(d.far_topic(), far_topic_key(r->topic, engine::far_key(*r)),
                                          rocksdb::Slice());
                            if (++queued < kBuildBatch && s.ok()) return true;
                            if (Status f = flush(); !f.ok()) return f;
                            return true;
                          });
  if (!st.ok()) return st;
  return flush();
}

Status scan_far_topic(Database& d, std::string_view topic, const engine::FarKey& from,
                      const engine::FarKey& below,
                      const std::function<bool(engine::JobRecord&&)>& fn,
                      const std::function<Status(const Status&)>& on_damage) {
  if (!d.topic_index())
    return Status(Errc::invalid_state, "store " + d.dir() + " has no index of its disk tier");
  if (!(from < below)) return Status();
  const std::string prefix = far_topic_prefix(topic);
  std::string value;
  return for_each_in(
      d, d.far_topic(), prefix + far_key(from), prefix + far_key(below),
      "scanning family 'far-topic'", [&](std::string_view k, std::string_view) -> Result<bool> {
        auto damaged = [&](const std::string& why) -> Result<bool> {
          const Status damage(Errc::corrupt,
                              fmt::format("store {}: family 'far-topic' lists far key {} under "
                                          "topic '{}', {}",
                                          d.dir(), hex(k.substr(prefix.size())), topic, why));
          if (!on_damage) return damage;
          if (Status st = on_damage(damage); !st.ok()) return st;
          return true;
        };
        const std::optional<engine::FarKey> key = decode_far_topic_key(k);
        if (!key) return damaged("a key of " + std::to_string(k.size()) + " bytes");
        const std::string fk = far_key(*key);
        rocksdb::Status s = d.db().Get(rocksdb::ReadOptions(), d.far(), fk, &value);
        if (s.IsNotFound()) return damaged("which holds no record");
        if (!s.ok()) return from_rocksdb(s, d.dir(), "reading family 'far'");
        Result<engine::JobRecord> r = decode_far_record(fk, value);
        if (!r) return damaged("whose record does not decode: " + r.status().message());
        if (r->topic != topic) return damaged("whose record is of topic '" + r->topic + "'");
        return fn(std::move(r).value());
      });
}

}  // namespace delayq::wal
