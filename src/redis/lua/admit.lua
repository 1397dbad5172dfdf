-- admit (a queue of several shards, run on the home shard, shard 0): before a claim on shard k
-- takes from topics with limits (claim.lua replied {7}), the home shard, which keeps each topic's
-- bucket and its places, admits up to the jobs asked: it takes that many tokens and places at
-- once. A place is a member of the topic's places zset (KEYS[10 + i], '<home tag>:p:<topic>'),
-- scored by when it frees itself: an admission's places are named 'a:<admission>:<n>' and held
-- for ARGV[5] µs, until settle.lua puts the jobs taken in their stead (scored by their lease
-- deadlines) and gives back what the claim did not take. Places whose score has passed are free
-- (a holder that crashed, a lease that ran out), with no message from the shard that held them.
-- ARGV[4] the reserve call's name ('' for none: no throttled count), ARGV[5] how long an
-- admission holds its places (µs), ARGV[6] the admission's name, then per topic: its name and
-- how many of its jobs are ready. Replies {0, then per topic: the jobs admitted, and when none,
-- the µs until the next token or the next place frees (-1: not known)}. A topic held back is
-- counted as throttled as the claim counts it on one shard (flow.lua, throttled()).
register('admit', function()
  local call, hold, adm = ARGV[4], tonumber(ARGV[5]), ARGV[6]
  if call == '' then call = nil end
  local out = {0}
  for i = 1, (#ARGV - 6) / 2 do
    local t, asked, p = ARGV[5 + 2 * i], tonumber(ARGV[6 + 2 * i]), KEYS[10 + i]
    local L, grant, wait = limits_of(t), asked, -1
    if L then
      redis.call('ZREMRANGEBYSCORE', p, '-inf', f(NOW))
      local a = {L = L, places = math.huge, toks = math.huge}
      if L.mif > 0 then a.places = math.max(0, L.mif - redis.call('ZCARD', p)) end
      if L.count > 0 then
        a.x = debt(L)
        a.toks = tokens(L, a.x)
      end
      grant = math.min(asked, a.places, a.toks)
      if grant > 0 then
        if L.count > 0 then
          a.x = a.x + grant * L.px
          set_debt(L, a.x)
        end
        local m = {}
        for n = 1, grant do
          m[#m + 1], m[#m + 2] = f(NOW + hold), 'a:' .. adm .. ':' .. n
        end
        redis.call('ZADD', p, unpack(m))
      end
      if grant < asked then
        a.places, a.toks = a.places - grant, a.toks - grant
        local w = throttled(a, call)
        if w == nil then
          local h = redis.call('ZRANGE', p, 0, 0, 'WITHSCORES')
          if h[2] then w = math.max(0, tonumber(h[2]) - NOW) end
        end
        if grant == 0 and w then wait = w end
      end
    end
    out[#out + 1], out[#out + 2] = grant, wait
  end
  return out
end)
