-- touch: a delivery's lease renewed for another ttr.
-- ARGV[4..6]: id, topic, fence. Replies {0, new lease deadline}, and a third element 1 when the
-- topic has limits (on several shards the client then moves the job's place, place.lua).
register('touch', function()
  local id, topic, k, j, err = the_job(true)
  if not j then return err end
  j[LEASE] = NOW + j[TTR]
  redis.call('ZADD', k.l, f(j[LEASE]), id)
  save(id, topic, j)
  if limited(topic) then return {0, j[LEASE], 1} end
  return {0, j[LEASE]}
end)
