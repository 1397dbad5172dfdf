-- ack_many (Queue::ack_batch): several acks of one topic's deliveries in one run, each judged as
-- ack judges it, in order. ARGV[4] the topic, then per delivery: id, fence. Replies {0, then per
-- delivery what ack would reply: {0}, or its refusal ({3}, {4, state, attempts}, {99, topic})}.
-- The accepted jobs are erased together at the end: a job accepted here is reserved with its
-- lease still running, so nothing in between (a catch-up of the topic) touches it; an id given
-- twice is not found the second time, as after an ack.
register('ack_many', function()
  local topic, k = ARGV[4], tkeys(1)
  local out, ids, gone = {0}, {}, {}
  if #ARGV < 6 then return out end
  -- Every record in one HMGET, judged by held_now() while no holder() has run: a holder() may
  -- catch the topic up, which changes records read before it, so from the first one on each
  -- delivery is judged by holder() (the rare path: a stale token, a lease run out).
  local asked = {}
  for i = 5, #ARGV - 1, 2 do asked[#asked + 1] = ARGV[i] end
  local raws, slow = redis.call('HMGET', JOBS, unpack(asked)), false
  for i = 5, #ARGV - 1, 2 do
    local id, fence = ARGV[i], tonumber(ARGV[i + 1])
    local j, err
    if gone[id] then
      err = {3}
    elseif not slow and held_now(raws[(i - 3) / 2], topic, fence) then
      j = true
    else
      slow = true
      j, err = holder(id, topic, fence, k)
    end
    if j then
      ids[#ids + 1], gone[id] = id, true
      out[#out + 1] = {0}
    else
      out[#out + 1] = err
    end
  end
  if #ids == 0 then return out end
  redis.call('ZREM', k.l, unpack(ids))
  redis.call('HDEL', JOBS, unpack(ids))
  redis.call('HDEL', BODY, unpack(ids))
  add_to_topic(topic, -#ids)
  redis.call('HINCRBY', STATS, 'acked', #ids)
  if freed(topic) then
    -- Each accepted delivery's reply says so, as ack's does.
    for i = 2, #out do
      if out[i][1] == 0 then out[i] = {0, 1} end
    end
  end
  return out
end)
