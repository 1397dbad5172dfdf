-- place (a queue of several shards, run on the home shard): a job of a topic with limits left
-- `reserved` on its own shard, or had its lease renewed, and its place on the home shard follows
-- (admit.lua). ARGV[4] 'free', 'back' (free, and the delivery's token back: release) or 'move';
-- ARGV[5] the topic, ARGV[6] the job's id, ARGV[7] its new lease deadline (move); KEYS[11] the
-- topic's places. A place that is gone already (its deadline passed) is not put back. A freed
-- place wakes the topic's waiting consumers. Replies {0}.
register('place', function()
  local op, t, id, p = ARGV[4], ARGV[5], ARGV[6], KEYS[11]
  if op == 'move' then
    redis.call('ZADD', p, 'XX', ARGV[7], id)
    return {0}
  end
  local gone = redis.call('ZREM', p, id)
  if op == 'back' then give_token_back(t) end
  if gone == 1 or op == 'back' then wake(t) end
  return {0}
end)
