-- list_dead: the oldest dead letters of a topic.
-- ARGV[4]: the most to list. Replies {0, then 10 fields per job as kGet}.
register('list_dead', function()
  local k = tkeys(1)
  advance(k)
  local out = {0}
  for _, id in ipairs(redis.call('ZRANGE', k.x, 0, tonumber(ARGV[4]) - 1)) do
    local j = load(id)
    if j then
      for _, v in ipairs(info(id, j)) do out[#out + 1] = v end
    end
  end
  return out
end)
