-- Redis memory per pending job in four key layouts, measured in one script run on an empty
-- private server with its default encodings (docs/benchmarks.md, "Redis memory per job: the
-- layouts"):
--   redis-cli -s SOCK --eval bench/redis_layout_memory.lua , 100000   (docs/benchmarks.md starts the server)
-- Each layout holds N jobs (6-byte ids, a 45-byte record as the backend's MessagePack record is,
-- a 64-byte body) and is deleted before the next; the reply is each layout's name and its bytes
-- per job (used_memory after, minus before, over N).
--   today          the backend's layout: the due set (one zset entry per job), the records hash
--                  and the bodies hash (one field each per job)
--   one_field      the same with record and body in one field of one hash
--   small_hashes   records and bodies in small hashes of about 64 fields each, picked by the
--                  id, which Redis keeps in its compact listpack encoding (at most 128 fields of
--                  at most 64 bytes by default); the due set unchanged
--   small_zsets    small_hashes, and the due set split into small sorted sets of 64 jobs
--                  consecutive in due time (listpack-encoded too; an index of the small sets
--                  would add one entry per 64 jobs, not counted)
local n = tonumber(ARGV[1] or '100000')
local body = string.rep('b', 64)
local rec = string.rep('r', 45)
local buckets = math.ceil(n / 64)

local function used()
  return tonumber(redis.call('INFO', 'memory'):match('used_memory:(%d+)'))
end

local function fill(layout)
  for i = 1, n do
    local id = string.format('%06d', i)
    local due = 1700000000000 + i
    local b = tostring(i % buckets)
    if layout == 'small_zsets' then
      redis.call('ZADD', 'lm:z:' .. tostring(math.floor(i / 64)), due, id)
    else
      redis.call('ZADD', 'lm:z', due, id)
    end
    if layout == 'today' then
      redis.call('HSET', 'lm:r', id, rec)
      redis.call('HSET', 'lm:b', id, body)
    elseif layout == 'one_field' then
      redis.call('HSET', 'lm:r', id, rec .. body)
    else
      redis.call('HSET', 'lm:r:' .. b, id, rec)
      redis.call('HSET', 'lm:b:' .. b, id, body)
    end
  end
end

local function clear(layout)
  redis.call('DEL', 'lm:z', 'lm:r', 'lm:b')
  if layout == 'small_hashes' or layout == 'small_zsets' then
    for b = 0, buckets - 1 do redis.call('DEL', 'lm:r:' .. b, 'lm:b:' .. b) end
  end
  if layout == 'small_zsets' then
    for z = 0, math.floor(n / 64) do redis.call('DEL', 'lm:z:' .. z) end
  end
end

local out = {}
for _, layout in ipairs({'today', 'one_field', 'small_hashes', 'small_zsets'}) do
  local before = used()
  fill(layout)
  local after = used()
  clear(layout)
  out[#out + 1] = layout
  out[#out + 1] = string.format('%.1f', (after - before) / n)
end
return out
