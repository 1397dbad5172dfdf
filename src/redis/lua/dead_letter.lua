-- dead_letter: a delivery given up; the job goes to the dead letters.
-- ARGV[4..6]: id, topic, fence.
register('dead_letter', function()
  local id, topic, k, j, err = the_job(true)
  if not j then return err end
  -- Issue 22: leases of the topic that ran out before now die first (the dead letters' order is
  -- when they died, as nack's catch-up keeps it).
  advance(k)
  redis.call('ZREM', k.l, id)
  to_dead(id, j, k)
  save(id, topic, j)
  if freed(topic) then return {0, 1} end
  return {0}
end)
