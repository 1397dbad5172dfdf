// The Lua scripts of the Redis backend: one function per transition, each run atomically by the
// server. The sources are src/redis/lua/*.lua (lua/prelude.lua states their conventions);
// docs/redis.md describes the key layout and each script.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace delayq::redis {

// One of the backend's Lua functions.
struct Script {
  std::string name;      // for messages
  std::string function;  // what FCALL calls
  // False for the scripts that only read (get, list_dead, topic_stats, flow_stats): no WAIT
  // after them (RedisOptions::replicas_to_ack).
  bool writes = true;
};

// The backend's Lua code as one function library (Redis 7 FUNCTION LOAD). Functions, unlike
// EVAL scripts, run the library's shared code once at load time: a call runs only its own body
// (the helpers of an EVAL script would be created anew by every call, ~5 µs each).
struct Library {
  std::string name;
  std::string source;           // "#!lua name=<name>" and the code
  std::vector<Script> scripts;  // indexed by the caller's script ids
};

// Indexes into library().scripts.
enum ScriptId : size_t {
  kPush,
  kClaim,
  kAck,
  kNack,
  kDeadLetter,
  kTouch,
  kCancel,
  kGet,
  kReschedule,
  kRequeueDead,
  kListDead,
  kRequeueDeadTopic,
  kPurgeDead,
  kTopicStats,
  kPushMany,
  kAckClaim,
  kRelease,
  kPause,
  kAckMany,
  kSetLimits,
  kFlowStats,
  kListJobs,  // issue 22: list_jobs.lua
  // Limits on several shards, on the home shard (admit.lua, settle.lua, place.lua).
  kAdmit,
  kSettle,
  kPlace,
  kSched,  // issue 23: a schedule's record, compare-and-set (sched.lua)
  kPushOnce,  // a schedule's occurrence, pushed at most once (push_once.lua)
  kSchedIndex,  // the schedules' ids, made again from their records (sched_index.lua)
  kScriptCount
};

// The backend's function library: every script, in ScriptId order.
const Library& library();

// Reply codes: the first element of every script's reply. The values match Errc where there is
// one; kWrongTopic asks the client to call again with the keys of the topic it names.
enum ReplyCode : int64_t {
  kOk = 0,
  kInvalidArgument = 1,
  kDuplicateId = 2,
  kNotFound = 3,
  kStaleToken = 4,
  kInvalidState = 5,
  kNothingReady = 6,
  kAdmitFirst = 7,  // claim on several shards: topics with limits need the home shard's admission
  kWrongTopic = 99,
};

// Job states as stored (the record's first field).
enum StoredState : int64_t { kDelayed = 0, kReady = 1, kReserved = 2, kDead = 3 };

}  // namespace delayq::redis
