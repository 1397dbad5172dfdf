-- push_once: push (push.lua) of a schedule's occurrence, at most once however often it is sent
-- (src/redis/redis_queue_schedules.cc). KEYS[16], after push's keys, is the occurrence's marker on
-- the job's shard, set with the job: a client that finds an occurrence pending (its firing
-- client died after the compare-and-set, before recording its push) pushes it again, and the
-- marker says whether the first push was made, even once its job is acked and gone. The client
-- that pushed shortens the marker's life to 30 s once the occurrence is no longer pending; a
-- marker left by a client that died, or set by a recovery, goes after a day. Replies push's {0}
-- and {2, state}, or {0, 1}: pushed before (the marker).
register('push_once', function()
  local marker = KEYS[16]
  if redis.call('EXISTS', marker) == 1 then return {0, 1} end
  local r = push_one()
  if r[1] == 0 then redis.call('SET', marker, '1', 'PX', 86400000) end
  return r
end)
