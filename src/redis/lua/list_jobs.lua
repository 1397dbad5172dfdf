-- list_jobs: a page of one topic's jobs in one state on this shard, in that state's order
-- (issue 22; docs/redis.md, "Browsing"). The topic is caught up first (advance()), as for a claim.
-- ARGV[4] the state (0 delayed, 1 ready, 2 reserved, 3 dead), ARGV[5] the most to list, ARGV[6..8]
-- where this shard's previous page stopped (all '' for the start):
--   delayed, reserved: {score (due or lease deadline, µs), push seq}: ties of a score are listed
--     in push order, which the zsets (ties by id) do not keep, so a tie is read whole;
--   dead: {score (the shard's seq when it died, unique)};
--   ready: {'q' or 'r', score, member}: q's part more urgent than the default, then r, then the
--     rest of q (heads()'s order).
-- Replies {0, then per job 14 fields: the 10 of info(), its position (3 strings, as ARGV[6..8]
-- take them) and its seq (push seq; line seq when ready; the death seq when dead)}.

-- In a block of its own: its helpers do not add to the library chunk's locals (Lua allows 200).
do
-- The jobs of zset `z` scored `score` whose push seq is above `after`, appended to `out`.
local function tie_after(out, z, score, after)
  for _, id in ipairs(redis.call('ZRANGE', z, f(score), f(score), 'BYSCORE')) do
    local j = load(id)
    if j and j[SEQN] > after then out[#out + 1] = {id = id, j = j, s = score, seq = j[SEQN]} end
  end
end

-- Delayed or reserved: by score, ties by push seq, after (s, after) when s is given.
local function by_score(z, n, s, after)
  local out, from = {}, '-inf'
  if s then
    tie_after(out, z, s, after)
    from = '(' .. f(s)
  end
  local more = redis.call('ZRANGE', z, from, '+inf', 'BYSCORE', 'LIMIT', 0, n, 'WITHSCORES')
  -- LIMIT may cut the last score's ties short: that score is read whole instead.
  local last = #more == 2 * n and tonumber(more[#more]) or nil
  for i = 1, #more, 2 do
    local sc = tonumber(more[i + 1])
    if sc ~= last then
      local j = load(more[i])
      if j then out[#out + 1] = {id = more[i], j = j, s = sc, seq = j[SEQN]} end
    end
  end
  if last then tie_after(out, z, last, -1) end
  table.sort(out, function(a, b)
    if a.s ~= b.s then return a.s < b.s end
    return a.seq < b.seq
  end)
  for i = #out, n + 1, -1 do out[i] = nil end
  for _, it in ipairs(out) do it.pos = {f(it.s), f(it.seq), ''} end
  return out
end

-- Dead: by the seq they died with (unique on a shard).
local function dead_after(z, n, s)
  local from = s and '(' .. f(s) or '-inf'
  local out = {}
  local got = redis.call('ZRANGE', z, from, '+inf', 'BYSCORE', 'LIMIT', 0, n, 'WITHSCORES')
  for i = 1, #got, 2 do
    local j = load(got[i])
    local sc = tonumber(got[i + 1])
    if j then out[#out + 1] = {id = got[i], j = j, seq = sc, pos = {f(sc), '', ''}} end
  end
  return out
end

-- The line seq at the front of a q member (qmember()).
local function member_seq(m)
  local seq = 0
  for i = 1, 8 do seq = seq * 256 + string.byte(m, i) end
  return seq
end

-- Up to `n` of q's members scored within [lo, hi], from rank `from` on, appended to `out`.
local function q_from(out, k, from, lo, hi, n)
  if n <= 0 then return end
  local got = redis.call('ZRANGE', k.q, from, from + n - 1, 'WITHSCORES')
  for i = 1, #got, 2 do
    local sc = tonumber(got[i + 1])
    if sc > hi then return end
    if sc >= lo then
      local id = string.sub(got[i], 9)
      local j = load(id)
      if j then out[#out + 1] = {id = id, j = j, seq = member_seq(got[i]), pos = {'q', f(sc), got[i]}} end
    end
  end
end

-- The rank in q just after (s, m), whether or not m is still there: a member that left is put
-- back for the ZRANK and taken out again (within this call: nobody sees it).
local function q_rank_after(k, s, m)
  local added = redis.call('ZADD', k.q, 'NX', f(s), m)
  local rank = redis.call('ZRANK', k.q, m)
  if added == 1 then
    redis.call('ZREM', k.q, m)
    return rank
  end
  return rank + 1
end

-- r's jobs after line seq `s` (all when nil), up to n, appended to `out`.
local function r_after(out, k, s, n)
  if n <= 0 then return end
  local from = s and '(' .. f(s) or '-inf'
  local got = redis.call('ZRANGE', k.r, from, '+inf', 'BYSCORE', 'LIMIT', 0, n, 'WITHSCORES')
  for i = 1, #got, 2 do
    local j = load(got[i])
    local sc = tonumber(got[i + 1])
    if j then out[#out + 1] = {id = got[i], j = j, seq = sc, pos = {'r', f(sc), ''}} end
  end
end

-- Ready: heads()'s order, after the position {part, score, member} when given.
local function ready_after(k, n, part, s, m)
  local out = {}
  local urgent_hi, rest_lo = DEFAULT_PRI - 1, DEFAULT_PRI + 1
  local rest_from = redis.call('ZCOUNT', k.q, '-inf', f(DEFAULT_PRI))
  if part == 'q' and s > DEFAULT_PRI then
    q_from(out, k, q_rank_after(k, s, m), rest_lo, math.huge, n)
    return out
  end
  if part ~= 'r' then
    local from = part == 'q' and q_rank_after(k, s, m) or 0
    q_from(out, k, from, -math.huge, urgent_hi, math.min(n, rest_from - from))
  end
  r_after(out, k, part == 'r' and s or nil, n - #out)
  q_from(out, k, rest_from, rest_lo, math.huge, n - #out)
  return out
end

register('list_jobs', function()
  local k = tkeys(1)
  advance(k)
  local state, n = tonumber(ARGV[4]), tonumber(ARGV[5])
  local a, b, c = ARGV[6], ARGV[7], ARGV[8]
  local at = a ~= '' and tonumber(a) or nil
  local items
  if state == DELAYED or state == RESERVED then
    items = by_score(state == DELAYED and k.d or k.l, n, at, tonumber(b) or -1)
  elseif state == DEAD then
    items = dead_after(k.x, n, at)
  else
    items = ready_after(k, n, a ~= '' and a or nil, tonumber(b), c)
  end
  local out = {0}
  for _, it in ipairs(items) do
    for _, v in ipairs(info(it.id, it.j)) do out[#out + 1] = v end
    out[#out + 1], out[#out + 2], out[#out + 3], out[#out + 4] = it.pos[1], it.pos[2], it.pos[3], it.seq
  end
  return out
end)
end
