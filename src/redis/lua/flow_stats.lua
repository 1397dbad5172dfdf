-- flow_stats (Stats::flow): the topics with limits (the client lists them with HKEYS of the limits
-- hash) caught up and shown as of NOW. ARGV[4]: the number of topics. Replies {0, per topic
-- {limits as stored, or '' when they were cleared meanwhile, tokens (0 without a rate), jobs
-- reserved now, claims throttled by the rate, by the cap}}. On a queue of several shards the
-- client asks the home shard alone, with ARGV[5] 'm', one key per topic (KEYS[10 + i], its
-- places, admit.lua) and the topics' names from ARGV[6] on: the jobs reserved are its places
-- whose deadline has not passed.
register('flow_stats', function()
  local out, home = {0}, ARGV[5] == 'm'
  for i = 1, tonumber(ARGV[4]) do
    local t, held_now
    if home then
      t = ARGV[5 + i]
      redis.call('ZREMRANGEBYSCORE', KEYS[10 + i], '-inf', f(NOW))
      held_now = redis.call('ZCARD', KEYS[10 + i])
    else
      local k = tkeys(i)
      advance(k)  -- leases that ran out are no longer in flight
      t, held_now = k.t, redis.call('ZCARD', k.l)
    end
    local v = redis.call('HGET', LIMITS, t)
    local L, toks = parse_limits(t, v), 0
    if L and L.count > 0 then toks = tokens(L, debt(L)) end
    local r = redis.call('HMGET', FLOW, 'r:' .. t, 'c:' .. t)
    out[#out + 1] = {v or '', toks, held_now, tonumber(r[1] or '0'), tonumber(r[2] or '0')}
  end
  return out
end)
