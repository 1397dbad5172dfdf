// The byte layout of the disk tier (docs/tiered-store.md, docs/journal-format.md): the families
// "far", "ids" and "far-topic" and the disk tier's keys in "meta". codec.h holds the rest of the layout; these
// two headers and their .cc files are the only code that knows it.
//
//   family "far"   key = far_key(FarKey): u64 due (ns since 1970), u64 seq, both big-endian
//                  value = encode_record(JobRecord), state delayed
//   family "ids"   key = the job's id            value = far_key() of its job
//   family "far-topic"  key = far_topic_key(topic, FarKey)   value = empty
//   family "meta"  "horizon"                     value = encode_horizon(FarKey)
//                  "far-count/" + topic          value = encode_count(n)
//                  "horizon-span"                value = encode_span(StoreOptions::horizon)
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "delayq/error.h"
#include "engine/tier/far_store.h"

namespace delayq::wal {

inline constexpr char kFarFamily[] = "far";
inline constexpr char kIdsFamily[] = "ids";
inline constexpr char kFarTopicFamily[] = "far-topic";
inline constexpr char kHorizonKey[] = "horizon";
inline constexpr char kFarCountPrefix[] = "far-count/";
inline constexpr char kHorizonSpanKey[] = "horizon-span";

inline constexpr size_t kFarKeySize = 16;
// Big-endian, so that RocksDB's byte order is (due, seq) order. Dues of disk-only jobs are never
// before 1970 (every push's is at least its `now`).
std::string far_key(const engine::FarKey& k);
// nullopt unless `bytes` is kFarKeySize long.
std::optional<engine::FarKey> decode_far_key(std::string_view bytes);

// A key of "far-topic", the per-topic index of "far": u32 the topic's length big-endian, the
// topic's bytes, then far_key(k). So one topic's keys are together, in (due, seq) order, and no
// topic's keys run into another's (a topic may hold any byte, '/' included).
std::string far_topic_prefix(std::string_view topic);
std::string far_topic_key(std::string_view topic, const engine::FarKey& k);
// The far key a key of "far-topic" ends with; nullopt unless its length is the one its topic's
// length says.
std::optional<engine::FarKey> decode_far_topic_key(std::string_view bytes);

// A record of "far": as in "jobs" (encode_record), and its due and seq must be its key's.
// Errors: corrupt, naming the key.
Result<engine::JobRecord> decode_far_record(std::string_view key, std::string_view value);

// meta/horizon: u8 version (1), then far_key(). Errors: corrupt.
std::string encode_horizon(const engine::FarKey& k);
Result<engine::FarKey> decode_horizon(std::string_view bytes);

// meta/horizon-span: the StoreOptions::horizon the store was last opened with, for opens that
// leave it unset: u8 version (1), i64 nanoseconds little-endian. Errors: corrupt.
std::string encode_span(Duration span);
Result<Duration> decode_span(std::string_view bytes);

// meta/far-count/<topic>: u8 version (1), u64 little-endian. Errors: corrupt.
std::string far_count_key(std::string_view topic);
std::string encode_count(uint64_t n);
Result<uint64_t> decode_count(std::string_view bytes);

}  // namespace delayq::wal
