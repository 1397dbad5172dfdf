-- sched: a compare-and-set of one schedule's record, on the queue's home shard (shard 0). The
-- client plans (time zones are beyond Lua: src/schedule/planner.h) from the record it read, and
-- this applies the new record only if the stored one is still the bytes it planned from, so
-- that of clients racing on one occurrence exactly one moves the schedule past it (and only that
-- one pushes its job). KEYS: the records (id -> bytes), the running schedules by next occurrence
-- (µs), the schedule's recent fired job ids (a list, newest last, 64 kept), the pending
-- occurrences (job id -> "<due, ns> <since, µs> <schedule id>": fired here, their push not yet
-- recorded by the client; redis_queue_schedules.cc), and the ids of every schedule (a zset, every
-- score 0, so that list_schedules pages through them in byte order with ZRANGEBYLEX).
-- ARGV[4..]: id, expect ('absent', 'any' or 'bytes'), the expected bytes, the new bytes (''
-- deletes the schedule), its next occurrence in µs ('' when paused or ended), then, for each job
-- this fire pushes, its id and its due time in ns. Replies {0} applied, {3} no such schedule
-- (expect 'any'), {5} the record changed since it was read: nothing done.
register('sched', function()
  local recs, due, recent, pending, ids = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
  local id, expect = ARGV[4], ARGV[5]
  local old = redis.call('HGET', recs, id)
  if expect == 'absent' then
    if old then return {5} end
  elseif expect == 'any' then
    if not old then return {3} end
  elseif old ~= ARGV[6] then
    return {5}
  end
  if ARGV[7] == '' then
    redis.call('HDEL', recs, id)
    redis.call('ZREM', due, id)
    redis.call('ZREM', ids, id)
    redis.call('DEL', recent)
    return {0}
  end
  redis.call('HSET', recs, id, ARGV[7])
  redis.call('ZADD', ids, 0, id)
  if ARGV[8] == '' then
    redis.call('ZREM', due, id)
  else
    redis.call('ZADD', due, ARGV[8], id)
  end
  if #ARGV >= 10 then
    local jobs = {}
    for i = 9, #ARGV - 1, 2 do
      jobs[#jobs + 1] = ARGV[i]
      redis.call('HSET', pending, ARGV[i], ARGV[i + 1] .. ' ' .. f(NOW) .. ' ' .. id)
    end
    redis.call('RPUSH', recent, unpack(jobs))
    redis.call('LTRIM', recent, -64, -1)
  end
  return {0}
end)
