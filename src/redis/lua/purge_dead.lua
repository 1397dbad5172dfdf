-- purge_dead: a topic's dead letters deleted, a batch per call.
-- At most CAP jobs per call. Replies {0, how many were deleted, how many dead are left}.
register('purge_dead', function()
  local n, k = dead_batch(erase)
  if n > 0 then redis.call('HINCRBY', STATS, 'purged', n) end
  return {0, n, redis.call('ZCARD', k.x)}
end)
