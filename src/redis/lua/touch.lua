-- touch: a delivery's lease renewed for another ttr.
-- ARGV[4..6]: id, topic, fence. Replies {0, new lease deadline}.
register('touch', function()
  local id, topic, k, j, err = the_job(true)
  if not j then return err end
  j[LEASE] = NOW + j[TTR]
  redis.call('ZADD', k.l, f(j[LEASE]), id)
  save(id, topic, j)
  return {0, j[LEASE]}
end)
