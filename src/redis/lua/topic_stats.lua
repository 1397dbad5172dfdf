-- topic_stats: the topics caught up and counted, and the shard's totals.
-- ARGV[4]: the number of topics. Replies {0, per topic {delayed, ready, reserved, dead, then the
-- delayed jobs due before each end of due_ends() (four counts, each including the last), then
-- how long the front of the ready line has been due, in µs (0: none ready; with priorities, the
-- older of r's and q's heads)}, then the shard's
-- stats hash as HGETALL gives it (the totals and the lateness counters)}.
register('topic_stats', function()
  local out = {0}
  local ends = due_ends()
  for i = 1, tonumber(ARGV[4]) do
    local k = tkeys(i)
    advance(k)
    local row = {redis.call('ZCARD', k.d), redis.call('ZCARD', k.r) + redis.call('ZCARD', k.q),
                 redis.call('ZCARD', k.l), redis.call('ZCARD', k.x)}
    for _, e in ipairs(ends) do row[#row + 1] = redis.call('ZCOUNT', k.d, '-inf', '(' .. f(e)) end
    local age = 0
    local heads = {redis.call('ZRANGE', k.r, 0, 0)[1], redis.call('ZRANGE', k.q, 0, 0)[1]}
    if heads[2] then heads[2] = string.sub(heads[2], 9) end
    for _, head in pairs(heads) do
      local j = load(head)
      if j then age = math.max(age, NOW - j[DUE]) end
    end
    row[#row + 1] = age
    out[#out + 1] = row
  end
  out[#out + 1] = redis.call('HGETALL', STATS)
  return out
end)
