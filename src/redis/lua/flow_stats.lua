-- flow_stats (Stats::flow): the topics with limits (the client lists them with HKEYS of the limits
-- hash) caught up and shown as of NOW. ARGV[4]: the number of topics. Replies {0, per topic
-- {limits as stored, or '' when they were cleared meanwhile, tokens (0 without a rate), jobs
-- reserved now, claims throttled by the rate, by the cap}}.
register('flow_stats', function()
  local out = {0}
  for i = 1, tonumber(ARGV[4]) do
    local k = tkeys(i)
    advance(k)  -- leases that ran out are no longer in flight
    local v = redis.call('HGET', LIMITS, k.t)
    local L, toks = parse_limits(k.t, v), 0
    if L and L.count > 0 then toks = tokens(L, debt(L)) end
    local r = redis.call('HMGET', FLOW, 'r:' .. k.t, 'c:' .. k.t)
    out[#out + 1] = {v or '', toks, redis.call('ZCARD', k.l), tonumber(r[1] or '0'),
                     tonumber(r[2] or '0')}
  end
  return out
end)
