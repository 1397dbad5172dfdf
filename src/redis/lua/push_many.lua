-- push_many (push_batch): many jobs of one topic in one run, the same as that many push scripts in
-- a row (duplicates refused one by one, a repeated id of the batch included), with a few commands
-- for the whole batch. ARGV[4] the topic, ARGV[5] the number of jobs, then per job: id, body, delay
-- (µs or ''), due_at (µs or ''), ttr, priority, kind, max_attempts, base, factor, cap, jitter, the
-- number of delays, the delays. Replies {0, per job: -1 if pushed, else the stored state of the job that
-- holds the id}.
register('push_many', function()
  local topic, n = ARGV[4], tonumber(ARGV[5])
  local k = tkeys(1)
  local jobs, ids = {}, {}
  local a = 6
  for i = 1, n do
    local nd = tonumber(ARGV[a + 12])
    local delays = {}
    for d = 1, nd do delays[d] = tonumber(ARGV[a + 12 + d]) end
    local due = NOW
    if ARGV[a + 2] ~= '' then
      due = NOW + tonumber(ARGV[a + 2])
    elseif ARGV[a + 3] ~= '' then
      due = tonumber(ARGV[a + 3])
    end
    jobs[i] = {id = ARGV[a], body = ARGV[a + 1], due = due, ttr = tonumber(ARGV[a + 4]),
               pri = tonumber(ARGV[a + 5]),
               pol = {tonumber(ARGV[a + 6]), tonumber(ARGV[a + 7]), tonumber(ARGV[a + 8]),
                      tonumber(ARGV[a + 9]), tonumber(ARGV[a + 10]), tonumber(ARGV[a + 11]), delays}}
    ids[i] = ARGV[a]
    a = a + 13 + nd
  end
  local old = redis.call('HMGET', JOBS, unpack(ids))
  local out, taken, new, ready = {0}, {}, {}, 0
  for i, job in ipairs(jobs) do
    if old[i] then
      local m = string.byte(old[i], 1)
      out[i + 1] = cmsgpack.unpack(string.sub(old[i], m + 2))[ST]
    elseif taken[job.id] then
      out[i + 1] = taken[job.id]
    else
      out[i + 1] = -1
      new[#new + 1] = job
      if job.due <= NOW then ready = ready + 1 end
      taken[job.id] = job.due <= NOW and READY or DELAYED
    end
  end
  if #new == 0 then return out end
  if ready > 0 then advance(k) end  -- jobs already due join the line before these
  local head = redis.call('ZRANGE', k.d, 0, 0, 'WITHSCORES')
  local seq = redis.call('INCRBY', SEQ, #new + ready) - #new - ready
  local bodies, recs, delayed, line, earliest = {}, {}, {}, {}, nil
  for _, job in ipairs(new) do
    seq = seq + 1
    local j = {DELAYED, 0, job.due, 0, job.ttr, 0, seq, job.pol}
    if job.pri ~= DEFAULT_PRI then j[PRI] = job.pri end  -- a default record stays an array of 8
    job.j = j
    if job.due <= NOW then
      seq = seq + 1
      j[ST], j[DUE] = READY, NOW
      line[#line + 1] = {id = job.id, j = j, seq = seq}
    else
      delayed[#delayed + 1] = f(job.due)
      delayed[#delayed + 1] = job.id
      if earliest == nil or job.due < earliest then earliest = job.due end
    end
    bodies[#bodies + 1] = job.id
    bodies[#bodies + 1] = job.body
  end
  join_lines(line, k)  -- before the records are packed: it notes their line seq
  for _, job in ipairs(new) do
    recs[#recs + 1] = job.id
    recs[#recs + 1] = string.char(#topic) .. topic .. cmsgpack.pack(job.j)
  end
  redis.call('HSET', BODY, unpack(bodies))
  redis.call('HSET', JOBS, unpack(recs))
  if #delayed > 0 then redis.call('ZADD', k.d, unpack(delayed)) end
  add_to_topic(topic, #new)
  redis.call('HINCRBY', STATS, 'pushed', #new)
  if #line > 0 or (earliest and (head[2] == nil or earliest < tonumber(head[2]))) then wake(topic) end
  return out
end)
