-- nack: a failed attempt now; retried after the given delay or the policy's, or dead.
-- ARGV[4..7]: id, topic, fence, delay (µs, or '' for the policy's).
register('nack', function()
  local id, topic, k, j, err = the_job(true)
  if not j then return err end
  advance(k)  -- a retry due now joins the line after the jobs due before it
  redis.call('ZREM', k.l, id)
  local delay
  if ARGV[7] ~= '' then delay = tonumber(ARGV[7]) end
  fail(id, topic, j, delay, NOW, k)
  save(id, topic, j)
  if freed(topic) then return {0, 1} end
  return {0}
end)
