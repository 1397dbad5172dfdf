-- requeue_dead_topic: a topic's dead letters ready again, a batch per call.
-- At most CAP jobs per call. Replies {0, how many were requeued, how many dead are left}.
register('requeue_dead_topic', function()
  local n, k = dead_batch(requeue)
  return {0, n, redis.call('ZCARD', k.x)}
end)
