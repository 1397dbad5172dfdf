-- push_many (push_batch): many jobs of one topic in one run, the same as that many push scripts in
-- a row (duplicates refused one by one, a repeated id of the batch included), with a few commands
-- for the whole batch. ARGV[4] the topic, ARGV[5] the number of jobs, then per job: id, body, delay
-- (µs or ''), due_at (µs or ''), ttr, priority, kind, max_attempts, base, factor, cap, jitter, the
-- number of delays, the delays. Replies {0, per job: -1 if pushed, else the stored state of the job that
-- holds the id}.
--
-- The per-job work is kept small (most of a run's time was Lua, not commands): a job of the
-- default priority is packed without a table, its policy packed once for the jobs that share it
-- (the ARGV strings of a batch's policies are usually the same); see record_of().

-- The packed policy of the job whose arguments start at ARGV[a], and its number of delays. `c`
-- caches the last one: {a = where its arguments were, nd = its delays, packed = its encoding}.
local function policy_of(a, c)
  local nd = tonumber(ARGV[a + 12])
  if c.a and c.nd == nd then
    local same = true
    for x = 6, 12 + nd do
      if ARGV[a + x] ~= ARGV[c.a + x] then
        same = false
        break
      end
    end
    if same then return c.packed, c.pol, nd end
  end
  local delays = {}
  for d = 1, nd do delays[d] = tonumber(ARGV[a + 12 + d]) end
  local pol = {tonumber(ARGV[a + 6]), tonumber(ARGV[a + 7]), tonumber(ARGV[a + 8]),
               tonumber(ARGV[a + 9]), tonumber(ARGV[a + 10]), tonumber(ARGV[a + 11]), delays}
  c.a, c.nd, c.packed, c.pol = a, nd, cmsgpack.pack(pol), pol
  return c.packed, pol, nd
end

-- A job of the default priority needs no table: the same bytes as cmsgpack.pack of the record
-- (an array of 8: its header, then the elements one after the other).
local function record_of(prefix, st, due, ttr, seq, packed_pol)
  return prefix .. '\152' .. cmsgpack.pack(st, 0, due, 0, ttr, 0, seq) .. packed_pol
end

register('push_many', function()
  local topic, n = ARGV[4], tonumber(ARGV[5])
  local k = tkeys(1)
  local ids, where = {}, {}
  local a = 6
  for i = 1, n do
    ids[i], where[i] = ARGV[a], a
    a = a + 13 + tonumber(ARGV[a + 12])
  end
  local old = redis.call('HMGET', JOBS, unpack(ids))
  local out, taken, new, ready = {0}, {}, {}, 0
  for i, id in ipairs(ids) do
    if old[i] then
      local m = string.byte(old[i], 1)
      out[i + 1] = cmsgpack.unpack(string.sub(old[i], m + 2))[ST]
    elseif taken[id] then
      out[i + 1] = taken[id]
    else
      local w = where[i]
      local due = NOW
      if ARGV[w + 2] ~= '' then
        due = NOW + tonumber(ARGV[w + 2])
      elseif ARGV[w + 3] ~= '' then
        due = tonumber(ARGV[w + 3])
      end
      out[i + 1] = -1
      new[#new + 1] = {id = id, a = w, due = due}
      if due <= NOW then ready = ready + 1 end
      taken[id] = due <= NOW and READY or DELAYED
    end
  end
  if #new == 0 then return out end
  if ready > 0 then advance(k) end  -- jobs already due join the line before these
  local head = redis.call('ZRANGE', k.d, 0, 0, 'WITHSCORES')
  local seq = redis.call('INCRBY', SEQ, #new + ready) - #new - ready
  local prefix = string.char(#topic) .. topic
  local bodies, recs, delayed, line, earliest, others = {}, {}, {}, {}, nil, {}
  local cache, plain = {}, {}  -- plain: the record of a default-priority job has no table
  for _, job in ipairs(new) do
    local w = job.a
    local packed, pol = policy_of(w, cache)
    local ttr, pri = tonumber(ARGV[w + 4]), tonumber(ARGV[w + 5])
    seq = seq + 1
    local st, due = DELAYED, job.due
    if due <= NOW then
      seq = seq + 1
      st, due = READY, NOW
    end
    if pri == DEFAULT_PRI then
      job.rec = record_of(prefix, st, due, ttr, seq - (st == READY and 1 or 0), packed)
      if st == READY then line[#line + 1] = {id = job.id, j = plain, seq = seq} end
    else
      -- Another priority: the record as a table, whose line seq join_lines() notes.
      local j = {st, 0, due, 0, ttr, 0, seq - (st == READY and 1 or 0), pol, pri}
      others[#others + 1] = job
      job.j = j
      if st == READY then line[#line + 1] = {id = job.id, j = j, seq = seq} end
    end
    if st == DELAYED then
      delayed[#delayed + 1] = f(due)
      delayed[#delayed + 1] = job.id
      if earliest == nil or due < earliest then earliest = due end
    end
    bodies[#bodies + 1] = job.id
    bodies[#bodies + 1] = ARGV[w + 1]
  end
  join_lines(line, k)  -- before the other records are packed: it notes their line seq
  for _, job in ipairs(others) do job.rec = prefix .. cmsgpack.pack(job.j) end
  for _, job in ipairs(new) do
    recs[#recs + 1] = job.id
    recs[#recs + 1] = job.rec
  end
  redis.call('HSET', BODY, unpack(bodies))
  redis.call('HSET', JOBS, unpack(recs))
  if #delayed > 0 then redis.call('ZADD', k.d, unpack(delayed)) end
  add_to_topic(topic, #new)
  redis.call('HINCRBY', STATS, 'pushed', #new)
  if #line > 0 or (earliest and (head[2] == nil or earliest < tonumber(head[2]))) then wake(topic) end
  return out
end)
