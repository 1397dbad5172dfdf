-- settle (a queue of several shards, run on the home shard after an admitted claim, admit.lua):
-- each topic's admitted places give way to the jobs the claim took, scored by their lease
-- deadlines, and what it did not take goes back: the places, and the tokens (a full bucket stays
-- full). Jobs of a topic whose limits were cleared meanwhile take no place.
-- ARGV[4] the admission's name, then per topic (KEYS[10 + i] its places): its name, the jobs
-- admitted, the jobs taken n, then n times the job's id and lease deadline (µs). Replies {0}.
register('settle', function()
  local adm, at, i = ARGV[4], 5, 0
  while at <= #ARGV do
    i = i + 1
    local t, admitted, n, p = ARGV[at], tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), KEYS[10 + i]
    at = at + 3
    if admitted > 0 then
      local gone = {}
      for m = 1, admitted do gone[m] = 'a:' .. adm .. ':' .. m end
      redis.call('ZREM', p, unpack(gone))
    end
    local L = limits_of(t)
    if L and n > 0 then
      local m = {}
      for j = 0, n - 1 do
        m[#m + 1], m[#m + 2] = ARGV[at + 2 * j + 1], ARGV[at + 2 * j]
      end
      redis.call('ZADD', p, unpack(m))
    end
    at = at + 2 * n
    if admitted > n then
      if L and L.count > 0 then set_debt(L, math.max(0, debt(L) - (admitted - n) * L.px)) end
      wake(t)
    end
  end
  return {0}
end)
