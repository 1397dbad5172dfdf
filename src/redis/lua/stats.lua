-- stats: the topics caught up and counted, and the shard's totals.
-- ARGV[4]: the number of topics. Replies {0, {delayed, ready, reserved, dead} per topic, then
-- the shard's totals as HGETALL gives them}.
register('stats', function()
  local out = {0}
  for i = 1, tonumber(ARGV[4]) do
    local k = tkeys(i)
    advance(k)
    out[#out + 1] = {redis.call('ZCARD', k.d), redis.call('ZCARD', k.r), redis.call('ZCARD', k.l),
                     redis.call('ZCARD', k.x)}
  end
  out[#out + 1] = redis.call('HGETALL', STATS)
  return out
end)
