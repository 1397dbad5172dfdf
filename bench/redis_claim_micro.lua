-- The Lua work per job of the Redis backend's claim path, old way against new, in one script run
-- on a private server (docs/benchmarks.md, "Redis server time per job"):
--   redis-cli -s SOCK --eval bench/redis_claim_micro.lua
-- Replies µs per job (times 100, as integers), in pairs old, new: leasing a record (unpacking it
-- whole, then packing it whole again; against take.lua's lease_record(): the first seven fields
-- read with unpack_limit and packed in a row, the policy's bytes kept); tallying its lateness (a
-- field name formatted and a linear scan of the bounds per job; against a bucket index found by
-- binary search, names built per call); and a catch-up of jobs that share due times (every record
-- decoded and sorted; against prelude.lua's ready_in_place(): each record's seq read with
-- unpack_limit, the indices sorted). Wall-clock (TIME): run it a few times on a busy machine.
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local N = 20000
local NOW = 1764625000123456
local BOUNDS = {100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
                1000000, 2500000, 5000000, 10000000, 30000000, 60000000, 300000000, 900000000,
                3600000000, 14400000000}
local raw = string.char(2) .. 'w1' .. cmsgpack.pack({1, 0, NOW - 4321, 0, 60000000, 0, 12345,
                                                     {2, 10, 1000000, 2.5, 3600000000, 0.25, {}}})
local ok, times = 0, {now()}
local function lap() times[#times + 1] = now() end

for i = 1, N do  -- lease, old
  local m = string.byte(raw, 1)
  local t = string.sub(raw, 2, m + 1)
  local j = cmsgpack.unpack(string.sub(raw, m + 2))
  j[1], j[2], j[6], j[4] = 2, j[2] + 1, i, NOW + j[5]
  local rec = string.char(#t) .. t .. cmsgpack.pack(j)
  if #rec > 0 and j[8][2] == 10 then ok = ok + 1 end
end
lap()
for i = 1, N do  -- lease, new
  local m = string.byte(raw, 1)
  local t = string.sub(raw, 2, m + 1)
  if string.byte(raw, m + 2) == 0x98 then
    local off, _, at, due, _, ttr, _, seq = cmsgpack.unpack_limit(raw, 7, m + 2)
    if off > 0 and string.byte(raw, off + 1) == 0x97 then
      local _, _, max_attempts = cmsgpack.unpack_limit(raw, 2, off + 1)
      local rec = string.sub(raw, 1, m + 2) .. cmsgpack.pack(2, at + 1, due, NOW + ttr, ttr, i, seq) ..
                      string.sub(raw, off + 1)
      if #rec > 0 and max_attempts == 10 and #t == 2 then ok = ok + 1 end
    end
  end
end
lap()

local function late_of(i) return (i * 7919) % 3000000 end  -- 0 to 3 s, spread over the buckets
local tally = {}
for i = 1, N do  -- tally, old
  local late = late_of(i)
  local b = #BOUNDS
  for x, bound in ipairs(BOUNDS) do
    if late <= bound then
      b = x - 1
      break
    end
  end
  local field = string.format('late:%s:%02d:', 'f', b) .. 'w1'
  tally[field] = (tally[field] or 0) + 1
  local sum = 'late:f:su:w1'
  tally[sum] = (tally[sum] or 0) + late
end
for _, n in pairs(tally) do ok = ok + (n > 0 and 0 or 1) end
ok = ok + N
lap()
local counts = {}
for i = 1, N do  -- tally, new
  local late = late_of(i)
  local c = counts['w1']
  if not c then
    c = {}
    counts['w1'] = c
  end
  local lo, hi = 1, #BOUNDS + 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if late <= BOUNDS[mid] then hi = mid else lo = mid + 1 end
  end
  local b = lo
  c[b] = (c[b] or 0) + 1
  c[47] = (c[47] or 0) + late
end
for _, c in pairs(counts) do
  for i, n in pairs(c) do
    local field = i <= 46 and string.format('late:%s:%02d:', 'f', i - 1) .. 'w1' or 'late:f:su:w1'
    if n > 0 and #field > 0 then ok = ok + 0 end
  end
end
ok = ok + N
lap()

-- A catch-up of 50 jobs at 25 due times (two per instant), N / 50 times.
local due, raws = {}, {}
for i = 1, 50 do
  due[2 * i - 1], due[2 * i] = 'id' .. i, tostring(NOW + math.floor((i + 1) / 2))
  raws[i] = string.char(2) .. 'w1' .. cmsgpack.pack({0, 0, NOW, 0, 60000000, 0, 1000 - i,
                                                     {2, 10, 1000000, 2.5, 3600000000, 0.25, {}}})
end
for _ = 1, N / 50 do  -- catch-up, old: decoded, sorted, packed
  local items = {}
  for i, r in ipairs(raws) do
    local n = string.byte(r, 1)
    items[i] = {id = due[2 * i - 1], at = tonumber(due[2 * i]), j = cmsgpack.unpack(string.sub(r, n + 2)),
                topic = string.sub(r, 2, n + 1)}
  end
  table.sort(items, function(a, b)
    if a.at ~= b.at then return a.at < b.at end
    return a.j[7] < b.j[7]
  end)
  for _, it in ipairs(items) do
    it.j[1] = 1
    if #(string.char(#it.topic) .. it.topic .. cmsgpack.pack(it.j)) > 0 then ok = ok + 1 end
  end
end
lap()
for _ = 1, N / 50 do  -- catch-up, new: the state patched in place, ties by the seq alone
  local live, seqs = {}, {}
  for i, r in ipairs(raws) do
    local m = string.byte(r, 1)
    if #(string.sub(r, 1, m + 2) .. string.char(1) .. string.sub(r, m + 4)) > 0 then
      live[#live + 1] = i
    end
    seqs[i] = select(8, cmsgpack.unpack_limit(r, 7, m + 2))
  end
  table.sort(live, function(a, b)
    if due[2 * a] ~= due[2 * b] then return tonumber(due[2 * a]) < tonumber(due[2 * b]) end
    return seqs[a] < seqs[b]
  end)
  ok = ok + #live
end
lap()
if ok ~= 6 * N then return redis.error_reply('a loop did not do its work: ' .. ok) end
local out = {}
for i = 2, #times do out[#out + 1] = math.floor((times[i] - times[i - 1]) * 100 / N) end
return out
