-- ack: a delivery done; the job is deleted.
-- ARGV[4..6]: id, topic, fence. Replies {0}, or {0, 1} when the topic has limits (prelude.lua,
-- freed(); the same for nack, dead_letter, release and cancel).
register('ack', function()
  local id, topic, fence, k = ARGV[4], ARGV[5], tonumber(ARGV[6]), tkeys(1)
  -- The usual ack, of a job reserved under this token, needs no decoding of its whole record.
  if not held_now(redis.call('HGET', JOBS, id), topic, fence) then
    local j, err = holder(id, topic, fence, k)
    if not j then return err end
  end
  -- A held job is reserved: erase() without the record.
  redis.call('ZREM', k.l, id)
  redis.call('HDEL', JOBS, id)
  redis.call('HDEL', BODY, id)
  add_to_topic(topic, -1)
  count('acked')
  if freed(topic) then return {0, 1} end
  return {0}
end)
