-- dead_letter: a delivery given up; the job goes to the dead letters.
-- ARGV[4..6]: id, topic, fence.
register('dead_letter', function()
  local id, topic, k, j, err = the_job(true)
  if not j then return err end
  redis.call('ZREM', k.l, id)
  to_dead(id, j, k)
  save(id, topic, j)
  freed(topic)
  return {0}
end)
