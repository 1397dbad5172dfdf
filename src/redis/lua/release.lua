-- release: a delivery undone. ARGV[4..6]: id, topic, fence. The job goes back in the line where it
-- was (before the first job due after it, ties: pushed after it), its attempt uncounted. The line's
-- scores are its order, so the job takes a score between its neighbours' (below the head's when it
-- goes first, as it usually does: it was the head when it was taken). A job of another priority
-- than the default goes back into q under the line seq it had there, so before the jobs of its
-- priority that joined after it. A topic with a rate gets the delivery's token back (flow.lua).
register('release', function()
  local id, topic, k, j, err = the_job(true)
  if not j then return err end
  advance(k)
  redis.call('ZREM', k.l, id)
  give_token_back(topic)  -- its place is free with the lease gone; the wake below tells waiters
  local done = limited(topic) and {0, 1} or {0}
  if prio(j) ~= DEFAULT_PRI then
    j[ST], j[AT] = READY, j[AT] - 1
    join_lines({{id = id, j = j, seq = j[LSQ] or redis.call('INCR', SEQ)}}, k)
    save(id, topic, j)
    count('released')
    wake(topic)
    return done
  end
  local function after(o) return o[DUE] < j[DUE] or (o[DUE] == j[DUE] and o[SEQN] < j[SEQN]) end
  local score, prev, from = nil, nil, 0
  while score == nil and from < CAP do
    local line = redis.call('ZRANGE', k.r, from, from + 31, 'WITHSCORES')
    if #line == 0 then break end
    local ids = {}
    for i = 1, #line, 2 do ids[#ids + 1] = line[i] end
    local raws = redis.call('HMGET', JOBS, unpack(ids))
    for i, raw in ipairs(raws) do
      local s = tonumber(line[2 * i])
      if raw and not after(cmsgpack.unpack(string.sub(raw, string.byte(raw, 1) + 2))) then
        score = prev and (prev + s) / 2 or s - 1
        break
      end
      prev = s
    end
    from = from + 32
  end
  -- Behind every job due before it (or, past CAP of them, at the back): a fresh score.
  if score == nil then score = redis.call('INCR', SEQ) end
  j[ST], j[AT] = READY, j[AT] - 1
  redis.call('ZADD', k.r, string.format('%.17g', score), id)
  save(id, topic, j)
  count('released')
  wake(topic)
  return done
end)
