-- claim (reserve): the most urgent ready job among some topics, leased.
-- ARGV[4]: the number of topics (keys from KEYS[11] on, five per topic, in the caller's order);
-- ARGV[5]: the most jobs to take (1 if absent); ARGV[6]: the reserve call's name, for the
-- throttled counts (take.lua; absent: none counted). Takes the ready job with the smallest priority,
-- then the earliest due time (ties: the topic listed first), again up to that many times, within
-- each topic's limits (take.lua); or says how long until the next due time, lease deadline or
-- token (of a topic whose rate held back a ready job) of those topics. Replies {0, then per job:
-- id, topic, body, attempt, max_attempts, fence, due, lease, priority} or {6, µs until the next
-- instant, or -1}.
-- On a queue of several shards ARGV[7] is there (flow.lua): '?' on the first look, which takes
-- nothing when a listed topic with limits has a ready job and replies {7, then per such topic its
-- index and how many of its jobs are ready (up to the most asked)}: the client then asks the home
-- shard to admit them (admit.lua) and claims again with ARGV[7] the grants, one integer per topic
-- (-1: none asked), each limited topic giving at most its grant.
register('claim', function()
  local n, want = tonumber(ARGV[4]), tonumber(ARGV[5] or '1')
  for i = 1, n do advance(tkeys(i)) end
  if ARGV[7] then
    GRANTS = {}
    if ARGV[7] == '?' then
      local need = {7}
      for i = 1, n do
        local k = tkeys(i)
        if limited(k.t) and not held(k) then  -- a topic without limits: one HEXISTS
          local ready = #(heads(k, want))
          if ready > 0 then
            need[#need + 1], need[#need + 2] = i, ready
          end
        end
      end
      if #need > 1 then return need end
    else
      for g in string.gmatch(ARGV[7], '%S+') do GRANTS[#GRANTS + 1] = tonumber(g) end
    end
  end
  local out, token = take(n, want, ARGV[6])
  if #out > 1 then return out end
  local nxt
  if token then nxt = NOW + token end
  for i = 1, n do
    local k = tkeys(i)
    for _, key in ipairs({k.d, k.l}) do
      local h = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
      if h[2] and (nxt == nil or tonumber(h[2]) < nxt) then nxt = tonumber(h[2]) end
    end
  end
  if nxt == nil then return {6, -1} end
  return {6, math.max(0, nxt - NOW)}
end)
