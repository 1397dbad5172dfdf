// The Lua sources of the Redis backend's scripts, as one function library (FUNCTION LOAD): the
// shared prelude (helpers and the rules of the state machine, mirroring src/engine/core.cc),
// run once when the library loads, then one function per transition, each calling setup()
// first and then running its body. (As EVAL scripts, every call ran the whole prelude again.)
//
// Conventions (docs/redis.md has the long form):
//  - KEYS[1..6] are the shard's keys: jobs, body, seq, fence, topics, stats. Then four keys per
//    topic the script works on: delayed, ready, leases, dead. Nothing else is touched, so every
//    script stays within one hash tag (one cluster slot).
//  - ARGV[1] the shard's wake channel, ARGV[2] max_delay in µs, ARGV[3] a random seed (jitter);
//    the script's own arguments follow from ARGV[4].
//  - Times are integers in µs since the epoch, read from the server's TIME. Lua numbers are
//    doubles, exact up to 2^53 µs (year 2255); they are formatted with %.0f before being handed
//    to redis.call, whose own conversion (%.14g) would round them.
//  - A job record is one field of the jobs hash: a byte with the topic's length, the topic, then
//    a MessagePack array {state, attempts, due, lease, ttr, fence, seq, policy}, policy being
//    {kind (0 fixed, 1 list, 2 exponential), max_attempts, base, factor, cap, jitter, {delays}}.
//    The body is kept apart (the body hash) so that transitions never rewrite it.
#include "redis/scripts.h"

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>

namespace delayq::redis {

namespace {

constexpr const char* kPrelude = R"lua(
-- Set by setup() at the start of every call: the call's keys and arguments, the shard's keys,
-- the wake channel, max_delay, the jitter seed and the server's time.
local KEYS, ARGV, JOBS, BODY, SEQ, FENCE, TOPICS, STATS, WAKE, MAXD, rng, NOW
local function setup(keys, args)
  KEYS, ARGV = keys, args
  JOBS, BODY, SEQ, FENCE, TOPICS, STATS = keys[1], keys[2], keys[3], keys[4], keys[5], keys[6]
  WAKE, MAXD, rng = args[1], tonumber(args[2]), tonumber(args[3])
  local t = redis.call('TIME')
  NOW = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local DELAYED, READY, RESERVED, DEAD = 0, 1, 2, 3
local ST, AT, DUE, LEASE, TTR, FEN, SEQN, POL = 1, 2, 3, 4, 5, 6, 7, 8
-- At most this many due jobs and this many expired leases per topic per call, so that a huge
-- backlog cannot stall the server in one script; the rest is handled by the next calls.
local CAP = 1000

local function f(x) return string.format('%.0f', x) end

-- Park-Miller: products stay below 2^53, so doubles compute it exactly.
local function random()
  rng = (rng * 16807) % 2147483647
  return rng / 2147483647
end

local function tkeys(i)
  local b = 6 + 4 * (i - 1)
  return {d = KEYS[b + 1], r = KEYS[b + 2], l = KEYS[b + 3], x = KEYS[b + 4]}
end

local function load(id)
  local raw = redis.call('HGET', JOBS, id)
  if not raw then return nil end
  local n = string.byte(raw, 1)
  return cmsgpack.unpack(string.sub(raw, n + 2)), string.sub(raw, 2, n + 1)
end

local function save(id, topic, j)
  redis.call('HSET', JOBS, id, string.char(#topic) .. topic .. cmsgpack.pack(j))
end

local function count(field) redis.call('HINCRBY', STATS, field, 1) end
local function wake(topic) redis.call('PUBLISH', WAKE, topic) end

-- Joins the back of the topic's line; `due` stays what it was.
local function make_ready(id, j, k)
  j[ST] = READY
  redis.call('ZADD', k.r, f(redis.call('INCR', SEQ)), id)
end

-- Delayed until `due`, or ready now (due = now) when `due` has come.
local function schedule(id, topic, j, due, k)
  if due <= NOW then
    j[DUE] = NOW
    make_ready(id, j, k)
    wake(topic)
    return
  end
  local head = redis.call('ZRANGE', k.d, 0, 0, 'WITHSCORES')
  j[ST], j[DUE] = DELAYED, due
  redis.call('ZADD', k.d, f(due), id)
  -- Consumers sleep until the earliest deadline they were told of: tell them of an earlier one.
  if head[2] == nil or due < tonumber(head[2]) then wake(topic) end
end

-- The wait before retry n (1 after the first failed delivery); see src/engine/retry.cc.
local function backoff(p, n)
  if n < 1 then n = 1 end
  if p[1] == 0 then return p[3] end
  if p[1] == 1 then
    local d = p[7]
    if #d == 0 then return 0 end
    return d[math.min(n, #d)]
  end
  local capped = math.min(p[3] * math.pow(p[4], n - 1), p[5])
  local d = capped
  if p[6] > 0 then d = d - capped * p[6] * random() end
  return math.floor(math.max(0, math.min(d, p[5])))
end

local function to_dead(id, j, k)
  j[ST] = DEAD
  redis.call('ZADD', k.x, f(redis.call('INCR', SEQ)), id)
  count('dead_lettered')
end

-- A failed attempt of a detached job, at instant `at`: retry after `delay` (or the policy's
-- wait), or dead-letter when it has had all its attempts.
local function fail(id, topic, j, delay, at, k)
  if j[AT] >= j[POL][2] then return to_dead(id, j, k) end
  local d = delay or backoff(j[POL], j[AT])
  if d > MAXD then d = MAXD end
  count('retried')
  schedule(id, topic, j, at + d, k)
end

local function detach(id, j, k)
  local s = j[ST]
  local key = (s == DELAYED and k.d) or (s == READY and k.r) or (s == RESERVED and k.l) or k.x
  redis.call('ZREM', key, id)
end

local function erase(id, topic, j, k)
  detach(id, j, k)
  redis.call('HDEL', JOBS, id)
  redis.call('HDEL', BODY, id)
  if redis.call('HINCRBY', TOPICS, topic, -1) <= 0 then redis.call('HDEL', TOPICS, topic) end
end

-- One timer of a job firing at `at`: a due delayed job becomes ready, a lease runs out.
local function fire(id, topic, j, at, k)
  if j[ST] == DELAYED then
    redis.call('ZREM', k.d, id)
    make_ready(id, j, k)
  else
    redis.call('ZREM', k.l, id)
    count('leases_expired')
    fail(id, topic, j, nil, at, k)  -- the retry counts from when the lease ran out
  end
  save(id, topic, j)
end

-- The usual catch-up, cheaply: only delayed jobs have come due (`due` as ZRANGEBYSCORE gave them,
-- with scores) and no two share a due time, so the zset's order is already the order of their
-- instants and no record needs decoding for the ties. Each record's state is patched in place:
-- the msgpack array's header (0x98: 8 elements) is followed by the state, a one-byte fixint.
-- Returns false, having changed nothing, when the batch does not fit (the caller then takes
-- the general path).
local function ready_in_place(due, k)
  for i = 4, #due, 2 do
    if due[i] == due[i - 2] then return false end
  end
  local ids = {}
  for i = 1, #due, 2 do ids[#ids + 1] = due[i] end
  local raws = redis.call('HMGET', JOBS, unpack(ids))
  local recs, line, live = {}, {}, {}
  for i, raw in ipairs(raws) do
    if raw then
      local m = string.byte(raw, 1)
      if string.byte(raw, m + 2) ~= 0x98 or string.byte(raw, m + 3) ~= DELAYED then return false end
      live[#live + 1] = i
      recs[#recs + 1] = ids[i]
      recs[#recs + 1] = string.sub(raw, 1, m + 2) .. string.char(READY) .. string.sub(raw, m + 4)
    end
  end
  redis.call('ZREM', k.d, unpack(ids))  -- leftovers without a record go too, never fired
  if #live == 0 then return true end
  local seq = redis.call('INCRBY', SEQ, #live) - #live
  for n, i in ipairs(live) do
    line[2 * n - 1], line[2 * n] = f(seq + n), ids[i]
  end
  redis.call('ZADD', k.r, unpack(line))
  redis.call('HSET', JOBS, unpack(recs))
  return true
end

-- Brings a topic up to now: due jobs become ready and expired leases fail, all in the order of
-- their instants (ties in push order), as the engine's catch-up does.
local function advance(k)
  local due = redis.call('ZRANGEBYSCORE', k.d, '-inf', f(NOW), 'WITHSCORES', 'LIMIT', 0, CAP)
  local expired = redis.call('ZRANGEBYSCORE', k.l, '-inf', f(NOW), 'WITHSCORES', 'LIMIT', 0, CAP)
  if #due == 0 and #expired == 0 then return end
  if #expired == 0 and ready_in_place(due, k) then return end
  local items = {}
  local function collect(list, key)
    if #list == 0 then return end
    local ids = {}
    for i = 1, #list, 2 do ids[#ids + 1] = list[i] end
    local raws = redis.call('HMGET', JOBS, unpack(ids))
    for i, raw in ipairs(raws) do
      local id = ids[i]
      if raw then
        local n = string.byte(raw, 1)
        items[#items + 1] = {id = id, at = tonumber(list[2 * i]), j = cmsgpack.unpack(string.sub(raw, n + 2)),
                             topic = string.sub(raw, 2, n + 1), lease = key == k.l}
      else
        redis.call('ZREM', key, id)  -- no record: a leftover, never fire it
      end
    end
  end
  collect(due, k.d)
  collect(expired, k.l)
  table.sort(items, function(a, b)
    if a.at ~= b.at then return a.at < b.at end
    return a.j[SEQN] < b.j[SEQN]
  end)
  if #expired == 0 and #items > 0 then
    -- Only due delayed jobs (the common case): they join the line in that order, with a few
    -- commands for the whole batch instead of a few per job.
    local ids, line, recs = {}, {}, {}
    local seq = redis.call('INCRBY', SEQ, #items) - #items
    for i, it in ipairs(items) do
      it.j[ST] = READY
      ids[i] = it.id
      line[2 * i - 1], line[2 * i] = f(seq + i), it.id
      recs[2 * i - 1], recs[2 * i] = it.id, string.char(#it.topic) .. it.topic .. cmsgpack.pack(it.j)
    end
    redis.call('ZREM', k.d, unpack(ids))
    redis.call('ZADD', k.r, unpack(line))
    redis.call('HSET', JOBS, unpack(recs))
    return
  end
  for _, it in ipairs(items) do fire(it.id, it.topic, it.j, it.at, k) end
end

-- The job `id` of `topic` with its own timer settled: nil and an error reply if it does not
-- exist or lives in another topic (then the client calls again with that topic's keys). Only a
-- job whose own timer has come needs the topic caught up first (its firing may put it on the
-- ready line, which must then hold every job due before it); otherwise the rest of the topic
-- can wait for the next call that takes from or adds to the line (those call advance()).
local function locate(id, topic, k)
  local j, t = load(id)
  if not j then return nil, {3} end
  if t ~= topic then return nil, {99, t} end
  if not ((j[ST] == DELAYED and j[DUE] <= NOW) or (j[ST] == RESERVED and j[LEASE] <= NOW)) then
    return j
  end
  advance(k)
  j = load(id)
  -- The batch limit may have left this job's own timer behind: fire it now.
  if j[ST] == DELAYED and j[DUE] <= NOW then
    fire(id, topic, j, j[DUE], k)
    j = load(id)
  elseif j[ST] == RESERVED and j[LEASE] <= NOW then
    fire(id, topic, j, j[LEASE], k)
    j = load(id)
  end
  return j
end

-- A job whose token (id, fence) is its current delivery, or an error reply.
local function holder(id, topic, fence, k)
  local j, err = locate(id, topic, k)
  if not j then return nil, err end
  if j[ST] == RESERVED and j[FEN] == fence then return j end
  return nil, {4, j[ST], j[AT]}
end

-- A dead job back in its topic's line, ready now with its attempts reset.
local function requeue(id, topic, j, k)
  redis.call('ZREM', k.x, id)
  j[AT], j[DUE] = 0, NOW
  make_ready(id, j, k)
  save(id, topic, j)
  count('requeued')
  wake(topic)
end

-- Takes the ready job with the earliest due time among topics 1..n (ties: the lower index),
-- again up to `want` times, leasing each. Returns {0, then per job: id, topic, body, attempt,
-- max_attempts, fence, due, lease}: just {0} when none is ready.
local function take(n, want)
  local out = {0}
  if n == 1 and want > 1 then
    -- One topic: the first `want` of its line, with a few commands for all of them.
    local k = tkeys(1)
    local ids = redis.call('ZRANGE', k.r, 0, want - 1)
    if #ids > 0 then
      local raws = redis.call('HMGET', JOBS, unpack(ids))
      local bodies = redis.call('HMGET', BODY, unpack(ids))
      local fence = redis.call('INCRBY', FENCE, #ids) - #ids
      local leases, recs, taken = {}, {}, 0
      for i, id in ipairs(ids) do
        if raws[i] then
          local m = string.byte(raws[i], 1)
          local t = string.sub(raws[i], 2, m + 1)
          local j = cmsgpack.unpack(string.sub(raws[i], m + 2))
          fence = fence + 1
          j[ST], j[AT], j[FEN], j[LEASE] = RESERVED, j[AT] + 1, fence, NOW + j[TTR]
          leases[#leases + 1] = f(j[LEASE])
          leases[#leases + 1] = id
          recs[#recs + 1] = id
          recs[#recs + 1] = string.char(#t) .. t .. cmsgpack.pack(j)
          local o = #out
          out[o + 1], out[o + 2], out[o + 3], out[o + 4] = id, t, bodies[i] or '', j[AT]
          out[o + 5], out[o + 6], out[o + 7], out[o + 8] = j[POL][2], j[FEN], j[DUE], j[LEASE]
          taken = taken + 1
        end
      end
      redis.call('ZREM', k.r, unpack(ids))  -- leftovers without a record go too
      if taken > 0 then
        redis.call('ZADD', k.l, unpack(leases))
        redis.call('HSET', JOBS, unpack(recs))
        redis.call('HINCRBY', STATS, 'delivered', taken)
        return out
      end
    end
  else
    for _ = 1, want do
      local best, bj, bt, bk
      for i = 1, n do
        local k = tkeys(i)
        local head = redis.call('ZRANGE', k.r, 0, 0)[1]
        if head then
          local j, t = load(head)
          if j and (best == nil or j[DUE] < bj[DUE]) then best, bj, bt, bk = head, j, t, k end
        end
      end
      if not best then break end
      redis.call('ZREM', bk.r, best)
      bj[ST] = RESERVED
      bj[AT] = bj[AT] + 1
      bj[FEN] = redis.call('INCR', FENCE)
      bj[LEASE] = NOW + bj[TTR]
      redis.call('ZADD', bk.l, f(bj[LEASE]), best)
      save(best, bt, bj)
      count('delivered')
      local o = #out
      local body = redis.call('HGET', BODY, best) or ''
      out[o + 1], out[o + 2], out[o + 3], out[o + 4] = best, bt, body, bj[AT]
      out[o + 5], out[o + 6], out[o + 7], out[o + 8] = bj[POL][2], bj[FEN], bj[DUE], bj[LEASE]
    end
  end
  return out
end

local function info(id, j)
  return {id, j[ST], j[AT], j[POL][2], j[DUE], j[LEASE], j[TTR], redis.call('HGET', BODY, id) or ''}
end
)lua";

// ARGV[4..]: id, topic, body, delay (µs or ''), due_at (µs or ''), ttr (µs), then the policy:
// kind, max_attempts, base, factor, cap, jitter, delays...
constexpr const char* kPushBody = R"lua(
local id, topic = ARGV[4], ARGV[5]
local k = tkeys(1)
local old = load(id)
if old then return {2, old[ST]} end
local due = NOW
if ARGV[7] ~= '' then
  due = NOW + tonumber(ARGV[7])
elseif ARGV[8] ~= '' then
  due = tonumber(ARGV[8])
end
if due <= NOW then advance(k) end  -- jobs already due join the line before this one
local delays = {}
for i = 16, #ARGV do delays[#delays + 1] = tonumber(ARGV[i]) end
local pol = {tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13]),
             tonumber(ARGV[14]), tonumber(ARGV[15]), delays}
local j = {DELAYED, 0, 0, 0, tonumber(ARGV[9]), 0, redis.call('INCR', SEQ), pol}
redis.call('HSET', BODY, id, ARGV[6])
redis.call('HINCRBY', TOPICS, topic, 1)
count('pushed')
schedule(id, topic, j, due, k)
save(id, topic, j)
return {0}
)lua";

// Many jobs of one topic in one run: the same as that many push scripts in a row (duplicates
// refused one by one, a repeated id of the batch included), with a few commands for the whole
// batch. ARGV[4] the topic, ARGV[5] the number of jobs, then per job: id, body, delay (µs or
// ''), due_at (µs or ''), ttr, kind, max_attempts, base, factor, cap, jitter, the number of
// delays, the delays. Replies {0, per job: -1 if pushed, else the stored state of the job that
// holds the id}.
constexpr const char* kPushManyBody = R"lua(
local topic, n = ARGV[4], tonumber(ARGV[5])
local k = tkeys(1)
local jobs, ids = {}, {}
local a = 6
for i = 1, n do
  local nd = tonumber(ARGV[a + 11])
  local delays = {}
  for d = 1, nd do delays[d] = tonumber(ARGV[a + 11 + d]) end
  local due = NOW
  if ARGV[a + 2] ~= '' then
    due = NOW + tonumber(ARGV[a + 2])
  elseif ARGV[a + 3] ~= '' then
    due = tonumber(ARGV[a + 3])
  end
  jobs[i] = {id = ARGV[a], body = ARGV[a + 1], due = due, ttr = tonumber(ARGV[a + 4]),
             pol = {tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6]), tonumber(ARGV[a + 7]),
                    tonumber(ARGV[a + 8]), tonumber(ARGV[a + 9]), tonumber(ARGV[a + 10]), delays}}
  ids[i] = ARGV[a]
  a = a + 12 + nd
end
local old = redis.call('HMGET', JOBS, unpack(ids))
local out, taken, new, ready = {0}, {}, {}, 0
for i, job in ipairs(jobs) do
  if old[i] then
    local m = string.byte(old[i], 1)
    out[i + 1] = cmsgpack.unpack(string.sub(old[i], m + 2))[ST]
  elseif taken[job.id] then
    out[i + 1] = taken[job.id]
  else
    out[i + 1] = -1
    new[#new + 1] = job
    if job.due <= NOW then ready = ready + 1 end
    taken[job.id] = job.due <= NOW and READY or DELAYED
  end
end
if #new == 0 then return out end
if ready > 0 then advance(k) end  -- jobs already due join the line before these
local head = redis.call('ZRANGE', k.d, 0, 0, 'WITHSCORES')
local seq = redis.call('INCRBY', SEQ, #new + ready) - #new - ready
local bodies, recs, delayed, line, earliest = {}, {}, {}, {}, nil
for _, job in ipairs(new) do
  seq = seq + 1
  local j = {DELAYED, 0, job.due, 0, job.ttr, 0, seq, job.pol}
  if job.due <= NOW then
    seq = seq + 1
    j[ST], j[DUE] = READY, NOW
    line[#line + 1] = f(seq)
    line[#line + 1] = job.id
  else
    delayed[#delayed + 1] = f(job.due)
    delayed[#delayed + 1] = job.id
    if earliest == nil or job.due < earliest then earliest = job.due end
  end
  bodies[#bodies + 1] = job.id
  bodies[#bodies + 1] = job.body
  recs[#recs + 1] = job.id
  recs[#recs + 1] = string.char(#topic) .. topic .. cmsgpack.pack(j)
end
redis.call('HSET', BODY, unpack(bodies))
redis.call('HSET', JOBS, unpack(recs))
if #line > 0 then redis.call('ZADD', k.r, unpack(line)) end
if #delayed > 0 then redis.call('ZADD', k.d, unpack(delayed)) end
redis.call('HINCRBY', TOPICS, topic, #new)
redis.call('HINCRBY', STATS, 'pushed', #new)
if #line > 0 or (earliest and (head[2] == nil or earliest < tonumber(head[2]))) then wake(topic) end
return out
)lua";

// ARGV[4]: the number of topics (keys from KEYS[7] on, four per topic, in the caller's order);
// ARGV[5]: the most jobs to take (1 if absent). Takes the ready job with the earliest due time
// (ties: the topic listed first), again up to that many times; or says how long until the next
// due time or lease deadline of those topics. Replies {0, then per job: id, topic, body,
// attempt, max_attempts, fence, due, lease} or {6, µs until the next instant, or -1}.
constexpr const char* kClaimBody = R"lua(
local n, want = tonumber(ARGV[4]), tonumber(ARGV[5] or '1')
for i = 1, n do advance(tkeys(i)) end
local out = take(n, want)
if #out > 1 then return out end
local nxt
for i = 1, n do
  local k = tkeys(i)
  for _, key in ipairs({k.d, k.l}) do
    local h = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    if h[2] and (nxt == nil or tonumber(h[2]) < nxt) then nxt = tonumber(h[2]) end
  end
end
if nxt == nil then return {6, -1} end
return {6, math.max(0, nxt - NOW)}
)lua";

// ARGV[4..6]: id, topic, fence.
constexpr const char* kAckBody = R"lua(
local id, topic = ARGV[4], ARGV[5]
local k = tkeys(1)
local j, err = holder(id, topic, tonumber(ARGV[6]), k)
if not j then return err end
erase(id, topic, j, k)
count('acked')
return {0}
)lua";

// ack, then claim in the same run: ARGV[4..6] as ack, ARGV[7] the most jobs to take, ARGV[8]
// the topic to take them from. They are taken only when the acked job is of that topic (the
// client may have guessed the job's topic wrong and be calling again with another topic's
// keys). A consumer loop that acks and reserves again thus needs one round trip and one script
// run per job instead of two. Replies as ack when the ack is refused, else as claim, {0}
// included when nothing is ready (the caller then claims the usual way, which tells it how
// long to wait).
constexpr const char* kAckClaimBody = R"lua(
local id, topic = ARGV[4], ARGV[5]
local k = tkeys(1)
local j, err = holder(id, topic, tonumber(ARGV[6]), k)
if not j then return err end
erase(id, topic, j, k)
count('acked')
local want = tonumber(ARGV[7])
if want < 1 or topic ~= ARGV[8] then return {0} end
advance(k)
return take(1, want)
)lua";

// ARGV[4..7]: id, topic, fence, delay (µs, or '' for the policy's).
constexpr const char* kNackBody = R"lua(
local id, topic = ARGV[4], ARGV[5]
local k = tkeys(1)
local j, err = holder(id, topic, tonumber(ARGV[6]), k)
if not j then return err end
advance(k)  -- a retry due now joins the line after the jobs due before it
redis.call('ZREM', k.l, id)
local delay
if ARGV[7] ~= '' then delay = tonumber(ARGV[7]) end
fail(id, topic, j, delay, NOW, k)
save(id, topic, j)
return {0}
)lua";

// ARGV[4..6]: id, topic, fence.
constexpr const char* kDeadLetterBody = R"lua(
local id, topic = ARGV[4], ARGV[5]
local k = tkeys(1)
local j, err = holder(id, topic, tonumber(ARGV[6]), k)
if not j then return err end
redis.call('ZREM', k.l, id)
to_dead(id, j, k)
save(id, topic, j)
return {0}
)lua";

// ARGV[4..6]: id, topic, fence. The delivery undone: the job back in the line where it was
// (before the first job due after it, ties: pushed after it), its attempt uncounted. The line's
// scores are its order, so the job takes a score between its neighbours' (below the head's
// when it goes first, as it usually does: it was the head when it was taken).
constexpr const char* kReleaseBody = R"lua(
local id, topic = ARGV[4], ARGV[5]
local k = tkeys(1)
local j, err = holder(id, topic, tonumber(ARGV[6]), k)
if not j then return err end
advance(k)
redis.call('ZREM', k.l, id)
local function after(o) return o[DUE] < j[DUE] or (o[DUE] == j[DUE] and o[SEQN] < j[SEQN]) end
local score, prev, from = nil, nil, 0
while score == nil and from < CAP do
  local line = redis.call('ZRANGE', k.r, from, from + 31, 'WITHSCORES')
  if #line == 0 then break end
  local ids = {}
  for i = 1, #line, 2 do ids[#ids + 1] = line[i] end
  local raws = redis.call('HMGET', JOBS, unpack(ids))
  for i, raw in ipairs(raws) do
    local s = tonumber(line[2 * i])
    if raw and not after(cmsgpack.unpack(string.sub(raw, string.byte(raw, 1) + 2))) then
      score = prev and (prev + s) / 2 or s - 1
      break
    end
    prev = s
  end
  from = from + 32
end
-- Behind every job due before it (or, past CAP of them, at the back): a fresh score.
if score == nil then score = redis.call('INCR', SEQ) end
j[ST], j[AT] = READY, j[AT] - 1
redis.call('ZADD', k.r, string.format('%.17g', score), id)
save(id, topic, j)
count('released')
wake(topic)
return {0}
)lua";

// ARGV[4..6]: id, topic, fence. Replies {0, new lease deadline}.
constexpr const char* kTouchBody = R"lua(
local id, topic = ARGV[4], ARGV[5]
local k = tkeys(1)
local j, err = holder(id, topic, tonumber(ARGV[6]), k)
if not j then return err end
j[LEASE] = NOW + j[TTR]
redis.call('ZADD', k.l, f(j[LEASE]), id)
save(id, topic, j)
return {0, j[LEASE]}
)lua";

// ARGV[4..5]: id, topic.
constexpr const char* kCancelBody = R"lua(
local id, topic = ARGV[4], ARGV[5]
local k = tkeys(1)
local j, err = locate(id, topic, k)
if not j then return err end
erase(id, topic, j, k)
count('cancelled')
return {0}
)lua";

// ARGV[4..5]: id, topic. Replies {0, id, state, attempts, max_attempts, due, lease, ttr, body,
// topic}.
constexpr const char* kGetBody = R"lua(
local id, topic = ARGV[4], ARGV[5]
local k = tkeys(1)
local j, err = locate(id, topic, k)
if not j then return err end
local r = info(id, j)
table.insert(r, 1, 0)
r[#r + 1] = topic
return r
)lua";

// ARGV[4..6]: id, topic, new due time (µs).
constexpr const char* kRescheduleBody = R"lua(
local id, topic = ARGV[4], ARGV[5]
local k = tkeys(1)
local j, err = locate(id, topic, k)
if not j then return err end
if j[ST] == RESERVED or j[ST] == DEAD then return {5, j[ST]} end
local when = tonumber(ARGV[6])
if when > NOW + MAXD then return {1, when - NOW} end
advance(k)
j = load(id)
detach(id, j, k)
schedule(id, topic, j, when, k)
save(id, topic, j)
return {0}
)lua";

// ARGV[4..5]: id, topic.
constexpr const char* kRequeueDeadBody = R"lua(
local id, topic = ARGV[4], ARGV[5]
local k = tkeys(1)
local j, err = locate(id, topic, k)
if not j then return err end
if j[ST] ~= DEAD then return {5, j[ST]} end
advance(k)
requeue(id, topic, j, k)
return {0}
)lua";

// ARGV[4]: the most to list. Replies {0, then 8 fields per job as kGet}.
constexpr const char* kListDeadBody = R"lua(
local k = tkeys(1)
advance(k)
local out = {0}
for _, id in ipairs(redis.call('ZRANGE', k.x, 0, tonumber(ARGV[4]) - 1)) do
  local j = load(id)
  if j then
    for _, v in ipairs(info(id, j)) do out[#out + 1] = v end
  end
end
return out
)lua";

// At most CAP jobs per call. Replies {0, how many were requeued, how many dead are left}.
constexpr const char* kRequeueDeadTopicBody = R"lua(
local k = tkeys(1)
advance(k)
local ids = redis.call('ZRANGE', k.x, 0, CAP - 1)
for _, id in ipairs(ids) do
  local j, topic = load(id)
  if j then requeue(id, topic, j, k) else redis.call('ZREM', k.x, id) end
end
return {0, #ids, redis.call('ZCARD', k.x)}
)lua";

// At most CAP jobs per call. Replies {0, how many were deleted, how many dead are left}.
constexpr const char* kPurgeDeadBody = R"lua(
local k = tkeys(1)
advance(k)
local ids = redis.call('ZRANGE', k.x, 0, CAP - 1)
for _, id in ipairs(ids) do
  local j, topic = load(id)
  if j then erase(id, topic, j, k) else redis.call('ZREM', k.x, id) end
end
if #ids > 0 then redis.call('HINCRBY', STATS, 'purged', #ids) end
return {0, #ids, redis.call('ZCARD', k.x)}
)lua";

// ARGV[4]: the number of topics. Replies {0, {delayed, ready, reserved, dead} per topic, then
// the shard's totals as HGETALL gives them}.
constexpr const char* kStatsBody = R"lua(
local out = {0}
for i = 1, tonumber(ARGV[4]) do
  local k = tkeys(i)
  advance(k)
  out[#out + 1] = {redis.call('ZCARD', k.d), redis.call('ZCARD', k.r), redis.call('ZCARD', k.l),
                   redis.call('ZCARD', k.x)}
end
out[#out + 1] = redis.call('HGETALL', STATS)
return out
)lua";

// FNV-1a, 64 bits: names the library after its source, so that clients of different versions
// sharing a server each find their own functions.
uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

struct Body {
  const char* name;
  const char* code;
};

Library make_library(std::initializer_list<Body> bodies) {
  std::string code = kPrelude;
  for (const Body& b : bodies)
    code += std::string("\nregister('") + b.name + "', function(keys, args)\nsetup(keys, args)" +
            b.code + "end)\n";
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(code)));
  const std::string tag = std::string("dq") + hex;
  Library lib;
  lib.name = "delayq_" + std::string(hex);
  // The functions' names carry the tag too: function names are global to a server, not per
  // library.
  lib.source = "#!lua name=" + lib.name + "\nlocal function register(name, fn)\n" +
               "  redis.register_function('" + tag + "_' .. name, fn)\nend\n" + code;
  for (const Body& b : bodies) lib.scripts.push_back(Script{b.name, tag + "_" + b.name});
  return lib;
}

}  // namespace

const Library& library() {
  // In ScriptId order.
  static const Library lib = make_library({
      {"push", kPushBody},
      {"claim", kClaimBody},
      {"ack", kAckBody},
      {"nack", kNackBody},
      {"dead_letter", kDeadLetterBody},
      {"touch", kTouchBody},
      {"cancel", kCancelBody},
      {"get", kGetBody},
      {"reschedule", kRescheduleBody},
      {"requeue_dead", kRequeueDeadBody},
      {"list_dead", kListDeadBody},
      {"requeue_dead_topic", kRequeueDeadTopicBody},
      {"purge_dead", kPurgeDeadBody},
      {"stats", kStatsBody},
      {"push_many", kPushManyBody},
      {"ack_claim", kAckClaimBody},
      {"release", kReleaseBody},
  });
  return lib;
}

}  // namespace delayq::redis
