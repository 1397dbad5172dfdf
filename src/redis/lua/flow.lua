-- Flow control per topic (Queue::set_topic_limits): helpers of the library, after the prelude and
-- before take.lua, which uses them. On a queue of one shard the shard's keys hold every job of the
-- topic, so its leases zset counts exactly the jobs reserved now, and one bucket in the shard
-- serves every client: the claim applies the limits itself. On several shards the topic's bucket
-- and its places live with the home shard (shard 0: admit.lua, settle.lua, place.lua), and a claim
-- takes from a limited topic only what the home shard admitted for it (GRANTS, see allowance()).
--
-- LIMITS (KEYS[9]) is a hash topic -> "<count> <per_x> <m> <burst> <max_in_flight>", written by
-- the client (redis_queue_limits.cc): count 0 for no rate, max_in_flight 0 for no cap; the rate's
-- period is per_x / m µs (m is 1 when the period is a whole number of µs, else 1000 and per_x is
-- in ns). The client refuses limits whose burst * per_x is above 2^52, so that every number below
-- stays an exact integer in a double.
--
-- FLOW (KEYS[10]) is a hash: 't:<topic>' the topic's bucket, 'r:<topic>' and 'c:<topic>' the
-- reserve calls it throttled by its rate and by its cap (TopicFlow::throttled_*), 'n:<topic>'
-- the last such call. The bucket is GCRA: the
-- theoretical arrival time `tat` of the next hand-out, kept as "<µs>:<fraction>" with the fraction
-- in units of 1/D µs, D = count * m, below D. In those units a token's interval T = per / count is
-- exactly per_x, so tat moves by whole units and never drifts. A hand-out is allowed when
-- tat - (burst - 1) * T <= NOW; it then moves tat to max(tat, NOW) + T. No field: a full bucket.

local function parse_limits(t, v)
  local c, px, m, b, mif = string.match(v or '', '^(%d+) (%d+) (%d+) (%d+) (%d+)$')
  if not c then return nil end
  return {t = t, count = tonumber(c), px = tonumber(px), m = tonumber(m), burst = tonumber(b),
          mif = tonumber(mif)}
end

-- The topic's limits, or nil: one HGET of a key that does not exist when no topic has limits.
local function limits_of(t) return parse_limits(t, redis.call('HGET', LIMITS, t)) end

-- floor(a / b) for integers 0 <= a <= 2^53 and b >= 1, exactly (the division of doubles may
-- round up to the next integer).
local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then
    q = q - 1
  elseif (q + 1) * b <= a then
    q = q + 1
  end
  return q
end
local function ceil_div(a, b) return idiv(a + b - 1, b) end

-- How far tat lies after NOW, in 1/D µs, between 0 (a full bucket) and burst * T (an empty
-- bucket; more only after the clock stepped back, which must not stall the topic that long).
local function debt(L)
  local s = redis.call('HGET', FLOW, 't:' .. L.t)
  if not s then return 0 end
  local tu, tf = string.match(s, '^(%d+):(%d+)$')
  if not tu then return 0 end
  local x = (tonumber(tu) - NOW) * L.count * L.m + tonumber(tf)
  if x <= 0 then return 0 end
  return math.min(x, L.burst * L.px)
end

local function set_debt(L, x)
  local field = 't:' .. L.t
  if x <= 0 then
    redis.call('HDEL', FLOW, field)
    return
  end
  local d = L.count * L.m
  local q = idiv(x, d)
  redis.call('HSET', FLOW, field, f(NOW + q) .. ':' .. f(x - q * d))
end

-- The hand-outs the rate allows now with that debt: j fit while x + (j - 1) * T <= (burst - 1) * T.
local function tokens(L, x) return L.burst - ceil_div(x, L.px) end
-- µs from NOW until the next token, when tokens() is 0: the first whole µs at which
-- x - (burst - 1) * T has run down to 0.
local function token_wait(L, x) return ceil_div(x - (L.burst - 1) * L.px, L.count * L.m) end

-- What topic k's limits let a claim take now, or nil when it has none: {L, n (how many), places,
-- toks, x (the debt), taken}. A topic held back by both counts as held by its cap.
-- On several shards (GRANTS set) the home shard counted the tokens and places: the topic gives
-- what it admitted for this claim (nothing without an admission), and nothing is spent or counted
-- here.
local function allowance(k)
  local L = limits_of(k.t)
  if not L then return nil end
  if GRANTS then
    local g = math.max(0, GRANTS[k.i] or 0)
    return {L = L, n = g, places = g, toks = g, taken = 0, home = true}
  end
  local a = {L = L, places = math.huge, toks = math.huge, taken = 0}
  if L.mif > 0 then a.places = math.max(0, L.mif - redis.call('ZCARD', k.l)) end
  if L.count > 0 then
    a.x = debt(L)
    a.toks = tokens(L, a.x)
  end
  a.n = math.min(a.places, a.toks)
  return a
end

-- Spends the tokens of the jobs a claim took from the topic (a.taken).
local function spend(a)
  if a.home or a.taken == 0 or a.L.count == 0 then return end
  a.x = a.x + a.taken * a.L.px
  set_debt(a.L, a.x)
end

-- A claim found a ready job of the topic that its limits held back: counted by cause, once per
-- reserve call (`call` names it, the same for each of its looks; 'n:<topic>' keeps the name of
-- the last call counted; nil: no call to count for). Returns the µs until the next token when the
-- rate is the cause (a freed place wakes the consumers waiting for the cap), else nil.
local function throttled(a, call)
  local cap = a.places <= a.toks
  if call then
    local last = 'n:' .. a.L.t
    if redis.call('HGET', FLOW, last) ~= call then
      redis.call('HSET', FLOW, last, call)
      redis.call('HINCRBY', FLOW, (cap and 'c:' or 'r:') .. a.L.t, 1)
    end
  end
  if cap then return nil end
  return token_wait(a.L, a.x)
end

-- release(): the delivery never reached a consumer, so its token goes back (a full bucket stays
-- full), and waiting consumers look again (the caller wakes them).
local function give_token_back(topic)
  local L = limits_of(topic)
  if L and L.count > 0 then set_debt(L, math.max(0, debt(L) - L.px)) end
end
