// The journal's byte layout: the names of its column families and keys, and the encoding of
// every value it stores. docs/journal-format.md describes the same layout byte by byte for a
// reader of the files; this header and codec.cc are the only code that knows it.
//
//   family "jobs"  key = job_key(seq)  value = encode_record(JobRecord)
//   family "meta"  "format"            value = encode_format(kFormatVersion)
//                  "totals"            value = encode_totals(Stats)
//                  "counters"          value = encode_counters(engine::Counters)
//                  "sync-marker"       never present: deleted by a synced write
//
// Every decoder takes any bytes (truncated, garbage, hostile) and returns a value or
// Errc::corrupt naming what it could not read; it checks every length against the bytes left
// before it reads or allocates. Decoders check structure only: whether a record makes sense to
// the engine (a valid policy, an id within limits) is for Core::restore() to judge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "delayq/error.h"
#include "engine/record.h"

namespace delayq::wal {

// The store's format version, in meta/format: the highest this build reads. A store with a
// higher one is refused. Version 2 added the disk tier (far_codec.h); version 3, job records of
// version 2 (a priority other than the default); version 4, the disk tier's per-topic index
// (family "far-topic", far_index.h), which a build of 2 or 3 would not keep in step. Each is
// written only once the store needs it: a store without the tier and without such a record is
// still version 1, and the first version 2 record raises such a store to 3 in the write that
// holds it (journal.cc); a store with the tier is version 4 from the open that gives it the
// tier or first opens it with this build (Database::check_format). Version 5, schedules
// (meta/schedule/<id>, schedule/record.h): a build of 4 would read the store and never fire them,
// so the write that puts the store's first schedule record raises it to 5 (journal.cc). So an
// older build never opens a store whose records it cannot read, or whose index or schedules it
// would let go out of step.
inline constexpr uint32_t kFormatVersion = 5;
inline constexpr uint32_t kTieredFormat = 2;  // no longer written: a store with the tier is 4
inline constexpr uint32_t kPriorityFormat = 3;
inline constexpr uint32_t kFarIndexFormat = 4;
inline constexpr uint32_t kScheduleFormat = 5;

inline constexpr char kJobsFamily[] = "jobs";
inline constexpr char kMetaFamily[] = "meta";
inline constexpr char kFormatKey[] = "format";
inline constexpr char kTotalsKey[] = "totals";
inline constexpr char kCountersKey[] = "counters";
// Deleted with a synced write by the background syncer: a write that exists only to make the
// log durable up to it. Never read.
inline constexpr char kSyncMarkerKey[] = "sync-marker";

// Keys of "jobs": the seq, 8 bytes big-endian, so that keys sort in push order (the fast way
// into RocksDB's memtable).
inline constexpr size_t kJobKeySize = 8;
std::string job_key(uint64_t seq);
// The seq of a key of kJobKeySize bytes (the caller checks the size).
uint64_t job_seq(std::string_view key);

// A job record: fixed-width little-endian fields, strings as a u32 byte count then the bytes
// (codec.cc lists them). Record version 1 at the default priority, else version 2 (version 1
// and a u32 priority); decode_record() reads both.
std::string encode_record(const engine::JobRecord& r);
// Whether encode_record() writes `r` as version 2, which needs store format kPriorityFormat.
bool needs_version_2(const engine::JobRecord& r);
// Errors: corrupt, naming `seq` and the field that could not be read; also when the record holds
// another seq than its key's.
Result<engine::JobRecord> decode_record(uint64_t seq, std::string_view bytes,
                                        std::string_view family = kJobsFamily);

// meta/format: the version as decimal text ("1"). nullopt: not decimal digits, 0, or over 32
// bits.
std::string encode_format(uint32_t version);
std::optional<uint32_t> decode_format(std::string_view text);

// meta/totals: u8 version (2), then the ten counters of Stats as u64, in for_each_total()'s
// order. Version 1 (nine counters, before `released`) is still read, released = 0.
std::string encode_totals(const Stats& t);
Result<Stats> decode_totals(std::string_view bytes);

// meta/counters: u8 version (2), u64 fences, u64 next_id, u64 seqs. While seqs is 0 (no disk
// tier), version 1: the same without seqs, as builds before version 2 wrote and read it.
std::string encode_counters(const engine::Counters& c);
Result<engine::Counters> decode_counters(std::string_view bytes);

// Lower-case hex of `bytes`, for messages that show what could not be read.
std::string hex(std::string_view bytes);

}  // namespace delayq::wal
