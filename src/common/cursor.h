// The cursor of Queue::list_jobs(): one codec for every backend, so that a cursor's text and its
// refusals read the same whatever serves the queue.
//
// A cursor is opaque text: "c1." then base64url (no padding) of
//   u8 state, u64 topic fingerprint, the boundary key (u32 priority, i64 at, u64 seq, u32 shard),
//   u16 shard count, per shard (u16 length, bytes: where that shard stopped, in the backend's
//   own words), u64 checksum of everything before it;
// integers little-endian. The boundary key is the merge key of the last job listed (the state's
// order: delayed (due, seq), ready (priority, due, seq), reserved (lease deadline, seq), dead
// (dead since, seq); the shard breaks ties). The checksum catches damage and naive edits, not a
// deliberate forgery; a forged cursor that passes it can only move where a page starts within
// the topic and state it names, since every backend lists that topic and state only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "delayq/error.h"
#include "delayq/job.h"

namespace delayq::cursor {

// The order of a job among those of its state (see the top of this file).
struct Key {
  uint32_t priority = 0;
  int64_t at = 0;  // ns since 1970
  uint64_t seq = 0;
  uint32_t shard = 0;
  auto operator<=>(const Key&) const = default;
};

struct Cursor {
  JobState state = JobState::delayed;
  uint64_t topic_fp = 0;
  Key boundary;
  // Per shard, where it stopped (empty: nowhere in particular; resume after the boundary).
  std::vector<std::string> shards;
  bool operator==(const Cursor&) const = default;
};

// At most this many shards, and bytes per shard position: a cursor stays a few KiB at most.
inline constexpr size_t kMaxShards = 1024;
inline constexpr size_t kMaxPosition = 1024;

uint64_t topic_fingerprint(std::string_view topic);

// Precondition: at most kMaxShards positions of at most kMaxPosition bytes.
std::string encode(const Cursor& c);
// The cursor, or invalid_argument: "cursor is not a delayq cursor" (no "c1." prefix), "cursor is
// damaged" (not base64url, too short or long, checksum), "cursor belongs to another topic",
// "cursor is for state X, not Y".
Result<Cursor> decode(std::string_view text, std::string_view topic, JobState state);

// A list of short strings as one shard position (the engine keeps the ids it stopped at), and
// back: nullopt when `bytes` is not such a list.
std::string pack(const std::vector<std::string>& items);
std::optional<std::vector<std::string>> unpack(std::string_view bytes);

}  // namespace delayq::cursor
