-- The prelude of the Redis backend's function library (Redis 7 FUNCTION LOAD): the helpers and
-- the rules of the state machine, mirroring src/engine/core.cc. The library is this file and then
-- one file per transition (the other files of this folder, each registering one function), run
-- once when the library loads; a call runs only its own function. src/redis/scripts.cc puts the
-- library together and names it; docs/redis.md has the long form of what follows. It is longer
-- than the project's 400 lines because Lua in Redis has no modules: every helper that two
-- functions share must be in the library's text once, and this file is that text.
--
-- Conventions:
--  - KEYS[1..10] are the shard's keys: jobs, body, seq, fence, topics, stats, paused (the set of
--    paused topics), emptied (a zset of the topics that emptied, by when: see forget_late()),
--    limits and flow (the topics' limits and their buckets, see flow.lua). Then five keys per topic the script works on: delayed, ready, leases, dead, and q (the
--    ready jobs whose priority is not the default's, see ready_add()). The home shard's scripts
--    of a queue of several shards (admit, settle, place, and flow_stats there) take one key per
--    topic instead: its places (admit.lua).
--    Nothing else is touched, so every script stays within one hash tag (one cluster slot).
--  - ARGV[1] the shard's wake channel, ARGV[2] max_delay in µs, ARGV[3] a random seed (jitter),
--    or "<seed>:<now in µs>" from a client on a test clock (RedisOptions::clock), whose now then
--    stands for the server's TIME; the script's own arguments follow from ARGV[4].
--  - Times are integers in µs since the epoch, read from the server's TIME. Lua numbers are
--    doubles, exact up to 2^53 µs (year 2255); they are formatted with %.0f before being handed
--    to redis.call, whose own conversion (%.14g) would round them.
--  - A job record is one field of the jobs hash: a byte with the topic's length, the topic, then
--    a MessagePack array {state, attempts, due, lease, ttr, fence, seq, policy[, priority[,
--    line seq]]}, policy being {kind (0 fixed, 1 list, 2 exponential), max_attempts, base, factor,
--    cap, jitter, {delays}}. The priority is there only when it is not the default (1024), so a
--    default record is an array of 8 (header 0x98); the line seq, with it, is where the job
--    stands in its topic's q zset (kept while it is reserved, for release).
--    The body is kept apart (the body hash) so that transitions never rewrite it.
--  - Every reply is a table whose first element is a code (src/redis/scripts.h, ReplyCode): 0 for
--    done, else a refusal: {2, state} duplicate id, {3} no such job, {4, state, attempts} stale
--    token, {5, state} a state the call does not apply to, {1, µs beyond now} a time too far
--    away, {6, µs until the next due time or lease deadline, or -1} nothing ready, and
--    {99, topic} "the job lives in that topic": the client calls again with its keys.
--
-- TAG, the prefix of every function's name, is set by the line scripts.cc puts before this file.

-- Set by setup() at the start of every call: the call's keys and arguments, the shard's keys,
-- the wake channel, max_delay, the jitter seed and the server's time (or the test clock's).
local KEYS, ARGV, JOBS, BODY, SEQ, FENCE, TOPICS, STATS, PAUSED, EMPTIED, LIMITS, FLOW
local WAKE, MAXD, rng, NOW
-- A claim on a queue of several shards: what the home shard admitted per listed topic (flow.lua);
-- nil on one shard, where the claim applies the limits itself.
local GRANTS
local function setup(keys, args)
  KEYS, ARGV, GRANTS = keys, args, nil
  JOBS, BODY, SEQ, FENCE, TOPICS, STATS = keys[1], keys[2], keys[3], keys[4], keys[5], keys[6]
  PAUSED, EMPTIED, LIMITS, FLOW = keys[7], keys[8], keys[9], keys[10]
  WAKE, MAXD = args[1], tonumber(args[2])
  local colon = string.find(args[3], ':', 1, true)
  if colon then
    rng, NOW = tonumber(string.sub(args[3], 1, colon - 1)), tonumber(string.sub(args[3], colon + 1))
    return
  end
  rng = tonumber(args[3])
  local t = redis.call('TIME')
  NOW = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- Registers one transition as the function TAG .. name: `body` runs after setup(), with KEYS and
-- ARGV set, and its result is the call's reply. Function names are global to a server, not per
-- library, hence the tag (a hash of the library's source).
local function register(name, body)
  redis.register_function(TAG .. name, function(keys, args)
    setup(keys, args)
    return body()
  end)
end

local DELAYED, READY, RESERVED, DEAD = 0, 1, 2, 3
local ST, AT, DUE, LEASE, TTR, FEN, SEQN, POL, PRI, LSQ = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
-- The priority of a job that names none (kDefaultPriority, include/delayq/job.h): smaller is more
-- urgent.
local DEFAULT_PRI = 1024
local function prio(j) return j[PRI] or DEFAULT_PRI end
-- At most this many due jobs and this many expired leases per topic per call, so that a huge
-- backlog cannot stall the server in one script; the rest is handled by the next calls.
local CAP = 1000

local function f(x) return string.format('%.0f', x) end

-- Park-Miller: products stay below 2^53, so doubles compute it exactly.
local function random()
  rng = (rng * 16807) % 2147483647
  return rng / 2147483647
end

-- The keys of topic i, its name `t` and its index `i`: the ready key is the shard's tag (JOBS
-- without ':jobs'), ':r:', then the topic.
local function tkeys(i)
  local b = 10 + 5 * (i - 1)
  local r = KEYS[b + 2]
  return {d = KEYS[b + 1], r = r, l = KEYS[b + 3], x = KEYS[b + 4], q = KEYS[b + 5],
          t = string.sub(r, #JOBS - 1), i = i}
end

-- A paused topic hands out nothing (Queue::pause): its ready jobs wait in its line.
local function held(k) return redis.call('SISMEMBER', PAUSED, k.t) == 1 end

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

-- Lateness: how long after its due time each delivery is handed out (NOW - due), kept in the
-- stats hash beside the totals, per topic and kind (f: first attempt, r: retry), in the buckets
-- of the engine (Lateness::kBounds in include/delayq/job.h, here in µs; a test holds them equal).
-- Fields: late:<kind>:<bucket 00..22>:<topic> (22: above the last bound), late:<kind>:su:<topic>
-- (the sum in µs) and late:<kind>:cl:<topic> (deliveries whose due time was after NOW: the
-- server's clock stepped back; counted as 0).
local LATE_BOUNDS = {100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
                     1000000, 2500000, 5000000, 10000000, 30000000, 60000000, 300000000, 900000000,
                     3600000000, 14400000000}

-- The bucket of a lateness in µs: the index (0-based) of the first bound it does not exceed, 22
-- above the last; a binary search over the bounds.
local function late_bucket(late)
  local lo, hi = 1, #LATE_BOUNDS + 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if late <= LATE_BOUNDS[mid] then hi = mid else lo = mid + 1 end
  end
  return lo - 1
end

-- Adds a delivery of `topic` (its attempt `attempt`, already counted; its due time `due`) to
-- `tally`, which holds per topic an array of counts that flush_late() writes with one HINCRBY per
-- field: per kind (0 f, 1 r), the buckets at 1 + 23 * kind + bucket, the sum at 47 + kind, the
-- clock steps at 49 + kind. No field name is built per delivery, only per call (flush_late()).
local function tally_late(tally, topic, attempt, due)
  local c = tally[topic]
  if not c then
    c = {}
    tally[topic] = c
  end
  local kind = attempt == 1 and 0 or 1
  local late = NOW - due
  if late < 0 then
    late = 0
    c[49 + kind] = (c[49 + kind] or 0) + 1
  end
  local b = 1 + 23 * kind + late_bucket(late)
  c[b] = (c[b] or 0) + 1
  c[47 + kind] = (c[47 + kind] or 0) + late
end

local function flush_late(tally)
  for topic, c in pairs(tally) do
    for i, n in pairs(c) do
      local field
      if i <= 46 then
        field = string.format('late:%s:%02d:', i <= 23 and 'f' or 'r', (i - 1) % 23) .. topic
      else
        field = 'late:' .. ((i % 2 == 1) and 'f' or 'r') .. (i <= 48 and ':su:' or ':cl:') .. topic
      end
      redis.call('HINCRBY', STATS, field, f(n))
    end
  end
end

-- Where the windows of what fires when end, as of NOW (src/common/timing.h, due_bounds()): the
-- next minute, hour, day and week, each a whole unit after NOW rounded down to a finer one.
local function due_ends()
  local s, m, h = 1000000, 60000000, 3600000000
  local hour = NOW - NOW % h
  return {NOW - NOW % s + 60 * s, NOW - NOW % m + 60 * m, hour + 24 * h, hour + 168 * h}
end
local function wake(topic) redis.call('PUBLISH', WAKE, topic) end
-- Whether `topic` has limits (flow.lua): one HEXISTS of the limits hash, which is absent when no
-- topic has any.
local function limited(topic) return redis.call('HEXISTS', LIMITS, topic) == 1 end
-- A reserved job of `topic` left `reserved`: consumers waiting for a place of a topic with limits
-- look again. Returns whether the topic has limits: the scripts then say so in their reply, so
-- that on several shards the client frees the job's place on the home shard (place.lua).
local function freed(topic)
  if not limited(topic) then return false end
  wake(topic)
  return true
end

-- A topic's ready jobs stand in two zsets. Those of the default priority in `r`, scored by their
-- line seq (when they joined the line), as before priorities existed; the others in `q`, scored
-- by their priority (a u32: exact in a double), the member being the line seq as 8 bytes
-- big-endian then the id, so that jobs of one priority sort by when they joined. (One score
-- cannot hold both: 32 bits of priority and 40 or more of seq do not fit in a double's 53.) The
-- most urgent ready job is q's head when its priority is below the default's, else r's head,
-- else q's head (heads()).
local function qmember(seq, id)
  local b = {}
  for i = 8, 1, -1 do
    b[i] = seq % 256
    seq = (seq - b[i]) / 256
  end
  return string.char(unpack(b)) .. id
end

-- Puts ready jobs on their topic's lines, with one ZADD per line: `jobs` a list of {id, j, seq},
-- seq being where each joins (its line seq). Sets the line seq of the records in `q`.
local function join_lines(jobs, k)
  local r, q = {}, {}
  for _, it in ipairs(jobs) do
    local p = prio(it.j)
    if p == DEFAULT_PRI then
      r[#r + 1], r[#r + 2] = f(it.seq), it.id
    else
      it.j[LSQ] = it.seq
      q[#q + 1], q[#q + 2] = f(p), qmember(it.seq, it.id)
    end
  end
  if #r > 0 then redis.call('ZADD', k.r, unpack(r)) end
  if #q > 0 then redis.call('ZADD', k.q, unpack(q)) end
end

-- Joins the back of the topic's line (of its priority); `due` stays what it was.
local function make_ready(id, j, k)
  j[ST] = READY
  join_lines({{id = id, j = j, seq = redis.call('INCR', SEQ)}}, k)
end

-- Delayed until `due`, or ready now (due = now) when `due` has come; `held`: delayed even then
-- (advance() makes it ready in its place among the jobs of its catch-up).
local function schedule(id, topic, j, due, k, held)
  if due <= NOW and not held then
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

-- The wait before retry n (1 after the first failed delivery); see src/engine/backoff.cc.
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

-- Issue 22 (browsing): a dead job has no lease, so its LEASE holds when it died (`at`, else NOW),
-- reported as JobInfo::dead_since; only reserved jobs' LEASE is read as a lease.
local function to_dead(id, j, k, at)
  j[ST], j[LEASE] = DEAD, at or NOW
  redis.call('ZADD', k.x, f(redis.call('INCR', SEQ)), id)
  count('dead_lettered')
end

-- A failed attempt of a detached job, at instant `at`: retry after `delay` (or the policy's
-- wait), or dead-letter when it has had all its attempts. `held`: see schedule().
local function fail(id, topic, j, delay, at, k, held)
  if j[AT] >= j[POL][2] then return to_dead(id, j, k, at) end
  local d = delay or backoff(j[POL], j[AT])
  if d > MAXD then d = MAXD end
  count('retried')
  schedule(id, topic, j, at + d, k, held)
end

local function detach(id, j, k)
  local s = j[ST]
  if s == READY and prio(j) ~= DEFAULT_PRI then
    redis.call('ZREM', k.q, qmember(j[LSQ] or 0, id))
    return
  end
  local key = (s == DELAYED and k.d) or (s == READY and k.r) or (s == RESERVED and k.l) or k.x
  redis.call('ZREM', key, id)
end

-- Topics that emptied keep their lateness counters in the stats hash (pushed to again, a topic
-- goes on counting) while they are among the IDLE_TOPICS of the shard emptied most recently
-- (the zset EMPTIED, scored by when); beyond that the one emptied longest ago loses them, so
-- that clients pushing to ever new topic names do not make the hash grow for good. A paused
-- topic is kept however long it stays empty. The engine's rule (CoreOptions::idle_topics,
-- docs/semantics.md, "Topics that are gone").
local IDLE_TOPICS = 1024

local function forget_late(topic)
  local fields = {}
  for _, kind in ipairs({'f', 'r'}) do
    for b = 0, #LATE_BOUNDS do fields[#fields + 1] = string.format('late:%s:%02d:', kind, b) .. topic end
    fields[#fields + 1] = 'late:' .. kind .. ':su:' .. topic
    fields[#fields + 1] = 'late:' .. kind .. ':cl:' .. topic
  end
  redis.call('HDEL', STATS, unpack(fields))
end

local function emptied(topic)
  if redis.call('SISMEMBER', PAUSED, topic) == 1 then return end
  redis.call('ZADD', EMPTIED, f(NOW), topic)
  if redis.call('ZCARD', EMPTIED) > IDLE_TOPICS then
    forget_late(redis.call('ZPOPMIN', EMPTIED)[1])
  end
end

-- Counts `n` jobs more (or fewer) in `topic`.
local function add_to_topic(topic, n)
  local left = redis.call('HINCRBY', TOPICS, topic, n)
  if left <= 0 then
    redis.call('HDEL', TOPICS, topic)
    emptied(topic)
  elseif left == n then
    redis.call('ZREM', EMPTIED, topic)  -- it held none: no longer among the emptied
  end
end

local function erase(id, topic, j, k)
  detach(id, j, k)
  redis.call('HDEL', JOBS, id)
  redis.call('HDEL', BODY, id)
  add_to_topic(topic, -1)
end

-- One timer of a job firing at `at`: a due delayed job becomes ready, a lease runs out (`held`:
-- see schedule()).
local function fire(id, topic, j, at, k, held)
  if j[ST] == DELAYED then
    redis.call('ZREM', k.d, id)
    make_ready(id, j, k)
  else
    redis.call('ZREM', k.l, id)
    count('leases_expired')
    fail(id, topic, j, nil, at, k, held)  -- the retry counts from when the lease ran out
    freed(topic)
  end
  save(id, topic, j)
end

-- The usual catch-up, cheaply: only delayed jobs have come due (`due` as ZRANGEBYSCORE gave them,
-- with scores), so no record needs decoding whole: they join the line in the order of their
-- instants, which is the zset's, and jobs due at the same instant in push order (their seq, the
-- record's seventh field, read with cmsgpack.unpack_limit). Each record's state is patched in
-- place: the msgpack array's header (0x98: 8 elements) is followed by the state, a one-byte
-- fixint. Only records of the default priority have that header (and go to `r`): a batch with any
-- other does not fit. Returns false, having changed nothing, when the batch does not fit (the
-- caller then takes the general path).
local function ready_in_place(due, k)
  local ties = false
  for i = 4, #due, 2 do
    if due[i] == due[i - 2] then
      ties = true
      break
    end
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
  if ties then
    local seqs = {}
    for _, i in ipairs(live) do
      local raw = raws[i]
      seqs[i] = select(8, cmsgpack.unpack_limit(raw, 7, string.byte(raw, 1) + 2))
    end
    table.sort(live, function(a, b)
      if due[2 * a] ~= due[2 * b] then return tonumber(due[2 * a]) < tonumber(due[2 * b]) end
      return seqs[a] < seqs[b]
    end)
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
    local ids, recs = {}, {}
    local seq = redis.call('INCRBY', SEQ, #items) - #items
    for i, it in ipairs(items) do
      it.j[ST], it.seq = READY, seq + i
      ids[i] = it.id
    end
    join_lines(items, k)
    for i, it in ipairs(items) do
      recs[2 * i - 1], recs[2 * i] = it.id, string.char(#it.topic) .. it.topic .. cmsgpack.pack(it.j)
    end
    redis.call('ZREM', k.d, unpack(ids))
    redis.call('HSET', JOBS, unpack(recs))
    return
  end
  -- A lease's retry that fell due by now takes its place among the items still to fire, as the
  -- engine's heap of instants does (ready at once, it would go ahead of jobs due before it);
  -- unless it is due after a timer that CAP left for the next call: it waits in k.d for that.
  local cut
  if #due == 2 * CAP then cut = tonumber(due[#due]) end
  if #expired == 2 * CAP and (not cut or tonumber(expired[#expired]) < cut) then
    cut = tonumber(expired[#expired])
  end
  local i = 1
  while i <= #items do
    local it = items[i]
    fire(it.id, it.topic, it.j, it.at, k, true)
    local j = it.j
    if it.lease and j[ST] == DELAYED and j[DUE] <= NOW and (not cut or j[DUE] < cut) then
      local n = i + 1
      while n <= #items and items[n].at <= j[DUE] do n = n + 1 end
      table.insert(items, n, {id = it.id, at = j[DUE], j = j, topic = it.topic, lease = false})
    end
    i = i + 1
  end
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

-- The cheap judging of an ack (ack, ack_many): true when `raw`, the record of the job, is of
-- `topic` and reserved under `fence` with its lease still running, which is all that holder()
-- would find then; false when anything else may hold (holder() then judges, with the catch-up
-- that may take). Decodes the record's first six fields only, not its policy.
local function held_now(raw, topic, fence)
  if not raw then return false end
  local m = string.byte(raw, 1)
  if string.sub(raw, 2, m + 1) ~= topic then return false end
  local h = string.byte(raw, m + 2)
  if h < 0x98 or h > 0x9a then return false end  -- an array of 8 to 10
  local _, st, _, _, lease, _, fen = cmsgpack.unpack_limit(raw, 6, m + 2)
  return st == RESERVED and fen == fence and lease > NOW
end

-- The prologue of the scripts about one job: ARGV[4] its id, ARGV[5] the topic the client
-- believes it is in, and with `fenced` (the calls of a delivery) ARGV[6] the token's fence.
-- Returns the id, the topic, the topic's keys and the job (located, its own timer settled; for a
-- fenced call, reserved under that fence), or, in place of the job, nil and the refusal to reply.
local function the_job(fenced)
  local id, topic, k = ARGV[4], ARGV[5], tkeys(1)
  if fenced then return id, topic, k, holder(id, topic, tonumber(ARGV[6]), k) end
  return id, topic, k, locate(id, topic, k)
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

-- A batch of the topic's dead letters (at most CAP), oldest first, each handed to `fn(id, topic,
-- j, k)`; leftovers without a record are dropped. Returns how many there were, and the topic's keys.
local function dead_batch(fn)
  local k = tkeys(1)
  advance(k)
  local ids = redis.call('ZRANGE', k.x, 0, CAP - 1)
  for _, id in ipairs(ids) do
    local j, topic = load(id)
    if j then fn(id, topic, j, k) else redis.call('ZREM', k.x, id) end
  end
  return #ids, k
end

-- A job as get and list_dead reply it: 10 fields, the ninth its policy {kind, base, factor, cap,
-- jitter, {delays}} with factor and jitter as text (a reply turns a Lua number into an integer),
-- the tenth its priority.
local function info(id, j)
  local p = j[POL]
  local pol = {p[1], p[3], string.format('%.17g', p[4]), p[5], string.format('%.17g', p[6]), p[7]}
  return {id, j[ST], j[AT], p[2], j[DUE], j[LEASE], j[TTR], redis.call('HGET', BODY, id) or '', pol,
          prio(j)}
end
