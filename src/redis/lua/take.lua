-- Claiming (claim.lua, ack_claim.lua): a topic's ready jobs in hand-out order and the leasing of
-- the most urgent, within each topic's limits (flow.lua). Helpers of the library, after flow.lua.

-- The first `want` ready jobs of a topic in the order they are handed out, each {id, key, m}:
-- the zset it stands in and its member there. q's jobs more urgent than the default come first,
-- then r's, then the rest of q's (see join_lines()). With no job of another priority, as much
-- work as r alone plus one ZRANGE of a key that does not exist.
local function heads(k, want)
  local q = redis.call('ZRANGE', k.q, 0, want - 1, 'WITHSCORES')
  local out, i = {}, 1
  while i < #q and tonumber(q[i + 1]) < DEFAULT_PRI do
    out[#out + 1] = {id = string.sub(q[i], 9), key = k.q, m = q[i]}
    i = i + 2
  end
  if #out < want then
    for _, id in ipairs(redis.call('ZRANGE', k.r, 0, want - #out - 1)) do
      out[#out + 1] = {id = id, key = k.r, m = id}
    end
  end
  while i < #q and #out < want do
    out[#out + 1] = {id = string.sub(q[i], 9), key = k.q, m = q[i]}
    i = i + 2
  end
  return out
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
  tally_late(tally, t, j)
end

-- One topic's first `want` ready jobs leased, with a few commands for all of them (the batched
-- claim of one topic), appended to `out`. Returns how many it took.
local function take_many(out, k, want, tally)
  local hs = heads(k, want)
  if #hs == 0 then return 0 end
  local ids, gone = {}, {[k.r] = {}, [k.q] = {}}
  for i, h in ipairs(hs) do
    ids[i] = h.id
    local g = gone[h.key]
    g[#g + 1] = h.m
  end
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
      lease(out, id, t, j, bodies[i], fence, tally)
      leases[#leases + 1] = f(j[LEASE])
      leases[#leases + 1] = id
      recs[#recs + 1] = id
      recs[#recs + 1] = string.char(#t) .. t .. cmsgpack.pack(j)
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
  if n == 1 and want > 1 then
    -- One topic: the first of its lines, with a few commands for all of them.
    if ks[1] then
      local a = allow[1]
      local w = a and math.min(want, a.n) or want
      if w > 0 then got = take_many(out, ks[1], w, tally) end
      if a then a.taken = got end
    end
  else
    for _ = 1, want do
      local best, bkey, bm, bj, bt, bi
      for i, k in ipairs(ks) do
        local a, id, key, m = allow[i], nil, nil, nil
        if not a or a.taken < a.n then id, key, m = head(k) end
        if id then
          local j, t = load(id)
          if j and (best == nil or prio(j) < prio(bj) or (prio(j) == prio(bj) and j[DUE] < bj[DUE])) then
            best, bkey, bm, bj, bt, bi = id, key, m, j, t, i
          end
        end
      end
      if not best then break end
      local bk = ks[bi]
      redis.call('ZREM', bkey, bm)
      lease(out, best, bt, bj, redis.call('HGET', BODY, best), redis.call('INCR', FENCE), tally)
      redis.call('ZADD', bk.l, f(bj[LEASE]), best)
      save(best, bt, bj)
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
