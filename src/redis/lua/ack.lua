-- ack: a delivery done; the job is deleted.
-- ARGV[4..6]: id, topic, fence. Replies {0}, or {0, 1} when the topic has limits (prelude.lua,
-- freed(); the same for nack, dead_letter, release and cancel).
register('ack', function()
  local id, topic, k, j, err = the_job(true)
  if not j then return err end
  erase(id, topic, j, k)
  count('acked')
  if freed(topic) then return {0, 1} end
  return {0}
end)
