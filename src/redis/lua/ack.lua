-- ack: a delivery done; the job is deleted.
-- ARGV[4..6]: id, topic, fence.
register('ack', function()
  local id, topic, k, j, err = the_job(true)
  if not j then return err end
  erase(id, topic, j, k)
  count('acked')
  freed(topic)
  return {0}
end)
