-- sched_index: the zset of every schedule's id (sched.lua) made again from the records, when their
-- counts differ: the schedules of a queue written by a version of the library without the zset,
-- or by a client of such a version since. KEYS: the records, the ids. Replies {0, n}: n ids.
register('sched_index', function()
  local recs, ids = KEYS[1], KEYS[2]
  local n = redis.call('HLEN', recs)
  if redis.call('ZCARD', ids) == n then return {0, n} end
  redis.call('DEL', ids)
  local all = redis.call('HKEYS', recs)
  for i = 1, #all, 1000 do
    local part = {}
    for k = i, math.min(i + 999, #all) do
      part[#part + 1] = 0
      part[#part + 1] = all[k]
    end
    redis.call('ZADD', ids, unpack(part))
  end
  return {0, n}
end)
