-- pause: ARGV[4] a topic, ARGV[5] '1' to pause it, '0' to resume it (Queue::pause). The shard's
-- set of paused topics (KEYS[7]) is what take() checks; a resume that changed it wakes the
-- shard's listeners, so that consumers waiting for the topic look again. Replies {0}.
register('pause', function()
  local topic = ARGV[4]
  if ARGV[5] == '1' then
    redis.call('SADD', PAUSED, topic)
    redis.call('ZREM', EMPTIED, topic)  -- kept however long it stays empty
  elseif redis.call('SREM', PAUSED, topic) == 1 then
    wake(topic)
    if redis.call('HEXISTS', TOPICS, topic) == 0 then emptied(topic) end  -- it emptied now
  end
  return {0}
end)
