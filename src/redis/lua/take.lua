-- Claiming (claim.lua, ack_claim.lua): a topic's ready jobs in hand-out order and the leasing of
-- the most urgent, within each topic's limits (flow.lua). Helpers of the library, after flow.lua.

-- The ids of a topic's first `want` ready jobs in the order they are handed out, and per zset
-- they stand in (k.r, k.q) the list of their members there: q's jobs more urgent than the default
-- come first, then r's, then the rest of q's (see join_lines()). With no job of another priority,
-- as much work as r alone plus one ZRANGE of a key that does not exist; no table per job.
local function heads(k, want)
  local q = redis.call('ZRANGE', k.q, 0, want - 1, 'WITHSCORES')
  local ids, rs, qs, i = {}, {}, {}, 1
  while i < #q and tonumber(q[i + 1]) < DEFAULT_PRI do
    ids[#ids + 1], qs[#qs + 1] = string.sub(q[i], 9), q[i]
    i = i + 2
  end
  if #ids < want then
    for _, id in ipairs(redis.call('ZRANGE', k.r, 0, want - #ids - 1)) do
      ids[#ids + 1], rs[#rs + 1] = id, id
    end
  end
  while i < #q and #ids < want do
    ids[#ids + 1], qs[#qs + 1] = string.sub(q[i], 9), q[i]
    i = i + 2
  end
  return ids, {[k.r] = rs, [k.q] = qs}
end

-- heads(k, 1) without its tables (the claim of one job, the hot path): the id, zset and member
-- of the topic's most urgent ready job, or nothing.
local function head(k)
  local q = redis.call('ZRANGE', k.q, 0, 0, 'WITHSCORES')
  if q[1] and tonumber(q[2]) < DEFAULT_PRI then return string.sub(q[1], 9), k.q, q[1] end
  local r = redis.call('ZRANGE', k.r, 0, 0)[1]
  if r then return r, k.r, r end
  if q[1] then return string.sub(q[1], 9), k.q, q[1] end
end

-- Leases the ready job `id` of topic `t` (record `j`, body `body`, fence `fence`) and appends it to
-- a claim's reply `out`: id, topic, body, attempt, max_attempts, fence, due, lease, priority.
local function lease(out, id, t, j, body, fence, tally)
  j[ST], j[AT], j[FEN], j[LEASE] = RESERVED, j[AT] + 1, fence, NOW + j[TTR]
  local o = #out
  out[o + 1], out[o + 2], out[o + 3], out[o + 4] = id, t, body or '', j[AT]
  out[o + 5], out[o + 6], out[o + 7], out[o + 8] = j[POL][2], j[FEN], j[DUE], j[LEASE]
  out[o + 9] = prio(j)
  tally_late(tally, t, j[AT], j[DUE])
end

-- lease() of the ready job `id` from its record `raw`, returning the leased record and its lease
-- deadline. A default-priority record (an array of 8, the usual one) is leased without decoding
-- its policy: the first seven fields read with cmsgpack.unpack_limit and packed again in a row
-- after the array's header, the policy's bytes kept as they are (a record that decodes as
-- cmsgpack.pack of the leased record would); any other is decoded and packed whole.
local function lease_record(out, id, raw, body, fence, tally)
  local m = string.byte(raw, 1)
  local t = string.sub(raw, 2, m + 1)
  if string.byte(raw, m + 2) == 0x98 then
    local off, _, at, due, _, ttr, _, seq = cmsgpack.unpack_limit(raw, 7, m + 2)
    if off > 0 and string.byte(raw, off + 1) == 0x97 then  -- the policy: an array of 7
      local _, _, max_attempts = cmsgpack.unpack_limit(raw, 2, off + 1)
      at = at + 1
      local until_ = NOW + ttr
      local o = #out
      out[o + 1], out[o + 2], out[o + 3], out[o + 4] = id, t, body or '', at
      out[o + 5], out[o + 6], out[o + 7], out[o + 8] = max_attempts, fence, due, until_
      out[o + 9] = DEFAULT_PRI
      tally_late(tally, t, at, due)
      return string.sub(raw, 1, m + 2) .. cmsgpack.pack(RESERVED, at, due, until_, ttr, fence, seq) ..
                 string.sub(raw, off + 1), until_
    end
  end
  local j = cmsgpack.unpack(string.sub(raw, m + 2))
  lease(out, id, t, j, body, fence, tally)
  return string.char(#t) .. t .. cmsgpack.pack(j), j[LEASE]
end

-- Where the ready job of record `raw` stands among the heads of several topics: its priority and
-- its due time, read without decoding the policy of a default-priority record.
local function rank(raw)
  local m = string.byte(raw, 1)
  if string.byte(raw, m + 2) == 0x98 then
    return DEFAULT_PRI, select(4, cmsgpack.unpack_limit(raw, 3, m + 2))
  end
  local j = cmsgpack.unpack(string.sub(raw, m + 2))
  return prio(j), j[DUE]
end

-- One topic's first `want` ready jobs leased, with a few commands for all of them (the claim of
-- one topic), appended to `out`. Returns how many it took.
local function take_many(out, k, want, tally)
  local ids, gone = heads(k, want)
  if #ids == 0 then return 0 end
  local raws = redis.call('HMGET', JOBS, unpack(ids))
  local bodies = redis.call('HMGET', BODY, unpack(ids))
  local fence = redis.call('INCRBY', FENCE, #ids) - #ids
  local leases, recs, taken = {}, {}, 0
  for i, id in ipairs(ids) do
    local raw = raws[i]
    if raw then
      fence = fence + 1
      local rec, until_ = lease_record(out, id, raw, bodies[i], fence, tally)
      leases[#leases + 1] = f(until_)
      leases[#leases + 1] = id
      recs[#recs + 1] = id
      recs[#recs + 1] = rec
      taken = taken + 1
    end
  end
  -- Leftovers without a record go too.
  for key, ms in pairs(gone) do
    if #ms > 0 then redis.call('ZREM', key, unpack(ms)) end
  end
  if taken > 0 then
    redis.call('ZADD', k.l, unpack(leases))
    redis.call('HSET', JOBS, unpack(recs))
    redis.call('HINCRBY', STATS, 'delivered', taken)
  end
  return taken
end

-- Takes the most urgent ready job among topics 1..n: the smallest priority, then the earliest
-- due time (ties: the lower index), again up to `want` times, leasing each. A paused topic is
-- passed over first; then a topic with limits (flow.lua) gives at most what its tokens and places
-- allow, and one whose limits hold back a ready job is counted as throttled. Returns {0, then 9
-- fields per job as lease() appends them} (just {0} when none is taken), and the µs until the
-- next token of a topic whose rate held back a ready job (nil if none). `call`: the reserve call
-- the throttled counts are for (throttled()), nil to count none.
local function take(n, want, call)
  local out, tally, got = {0}, {}, 0
  local ks, allow = {}, {}
  for i = 1, n do
    local k = tkeys(i)
    if not held(k) then
      ks[#ks + 1] = k
      allow[#ks] = allowance(k) or false
    end
  end
  if n == 1 then
    -- One topic: the first of its lines, with a few commands for all of them (and for one job
    -- the same commands as the loop below, without its decoding of the record).
    if ks[1] then
      local a = allow[1]
      local w = a and math.min(want, a.n) or want
      if w > 0 then got = take_many(out, ks[1], w, tally) end
      if a then a.taken = got end
    end
  else
    for _ = 1, want do
      local best, bkey, bm, braw, bp, bdue, bi
      for i, k in ipairs(ks) do
        local a, id, key, m = allow[i], nil, nil, nil
        if not a or a.taken < a.n then id, key, m = head(k) end
        local raw = id and redis.call('HGET', JOBS, id)
        if raw then
          local p, due = rank(raw)
          if best == nil or p < bp or (p == bp and due < bdue) then
            best, bkey, bm, braw, bp, bdue, bi = id, key, m, raw, p, due, i
          end
        end
      end
      if not best then break end
      local bk = ks[bi]
      redis.call('ZREM', bkey, bm)
      local rec, until_ = lease_record(out, best, braw, redis.call('HGET', BODY, best),
                                       redis.call('INCR', FENCE), tally)
      redis.call('ZADD', bk.l, f(until_), best)
      redis.call('HSET', JOBS, best, rec)
      count('delivered')
      got = got + 1
      if allow[bi] then allow[bi].taken = allow[bi].taken + 1 end
    end
  end
  flush_late(tally)
  -- The limited topics: tokens spent, and a ready job held back counted (when the topic gave
  -- nothing, or the claim wanted more than it gave).
  local wait
  for i, a in ipairs(allow) do
    if a and not a.home then
      spend(a)
      if a.taken >= a.n and (a.taken == 0 or got < want) and head(ks[i]) then
        a.places, a.toks = a.places - a.taken, a.toks - a.taken
        local w = throttled(a, call)
        if w and (wait == nil or w < wait) then wait = w end
      end
    end
  end
  return out, wait
end
