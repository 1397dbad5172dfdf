-- The Lua work per job of the Redis backend's record handling, old way against new, in one script
-- run on a private server (docs/benchmarks.md, "Redis server time per job"):
--   redis-cli -s SOCK --eval bench/redis_record_micro.lua
-- Replies µs per job (times 100, as integers): packing a push_many record as a table
-- (cmsgpack.pack of the record with its policy table) and as push_many packs it now (the policy
-- packed once, the fields packed in a row); judging an ack's token by unpacking the whole record
-- and by held_now()'s first six fields. Wall-clock (TIME): run it a few times on a busy machine.
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local N = 20000
local args = {'0', '10', '1000000', '2', '3600000000', '0', '0'}
local prefix = string.char(2) .. 'w1'
local out, ok = {}, 0
local t0 = now()
for i = 1, N do
  local pol = {tonumber(args[1]), tonumber(args[2]), tonumber(args[3]), tonumber(args[4]),
               tonumber(args[5]), tonumber(args[6]), {}}
  local rec = prefix .. cmsgpack.pack({0, 0, 1764625000123456 + i, 0, 0, 0, 1000 + i, pol})
  if #rec > 0 then ok = ok + 1 end
end
local t1 = now()
local packed = cmsgpack.pack({0, 10, 1000000, 2, 3600000000, 0, {}})
for i = 1, N do
  local rec = prefix .. '\152' .. cmsgpack.pack(0, 0, 1764625000123456 + i, 0, 0, 0, 1000 + i) .. packed
  if #rec > 0 then ok = ok + 1 end
end
local t2 = now()
local raw = prefix .. cmsgpack.pack({2, 1, 1764625000123456, 1764625060123456, 60000000, 77, 12345,
                                     {2, 10, 1000000, 2, 3600000000, 0, {}}})
for _ = 1, N do
  local n = string.byte(raw, 1)
  local j, t = cmsgpack.unpack(string.sub(raw, n + 2)), string.sub(raw, 2, n + 1)
  if t == 'w1' and j[1] == 2 and j[6] == 77 and j[4] > 5 then ok = ok + 1 end
end
local t3 = now()
for _ = 1, N do
  local m = string.byte(raw, 1)
  if string.sub(raw, 2, m + 1) == 'w1' and string.byte(raw, m + 2) == 0x98 then
    local _, st, _, _, lease, _, fen = cmsgpack.unpack_limit(raw, 6, m + 2)
    if st == 2 and fen == 77 and lease > 5 then ok = ok + 1 end
  end
end
local t4 = now()
if ok ~= 4 * N then return redis.error_reply('a loop did not do its work') end
for _, d in ipairs({t1 - t0, t2 - t1, t3 - t2, t4 - t3}) do out[#out + 1] = math.floor(d * 100 / N) end
return out
