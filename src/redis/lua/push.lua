-- push: one job stored, delayed or ready now; an id that exists is refused with its state.
-- ARGV[4..]: id, topic, body, delay (µs or ''), due_at (µs or ''), ttr (µs), priority, then the
-- policy: kind, max_attempts, base, factor, cap, jitter, delays...
local function push_one()
  local id, topic = ARGV[4], ARGV[5]
  local k = tkeys(1)
  local old = load(id)
  if old then return {2, old[ST]} end
  local due = NOW
  if ARGV[7] ~= '' then
    due = NOW + tonumber(ARGV[7])
  elseif ARGV[8] ~= '' then
    due = tonumber(ARGV[8])
  end
  if due <= NOW then advance(k) end  -- jobs already due join the line before this one
  local delays = {}
  for i = 17, #ARGV do delays[#delays + 1] = tonumber(ARGV[i]) end
  local pol = {tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13]), tonumber(ARGV[14]),
               tonumber(ARGV[15]), tonumber(ARGV[16]), delays}
  local j = {DELAYED, 0, 0, 0, tonumber(ARGV[9]), 0, redis.call('INCR', SEQ), pol}
  local p = tonumber(ARGV[10])
  if p ~= DEFAULT_PRI then j[PRI] = p end  -- a default record stays an array of 8
  redis.call('HSET', BODY, id, ARGV[6])
  add_to_topic(topic, 1)
  count('pushed')
  schedule(id, topic, j, due, k)
  save(id, topic, j)
  return {0}
end
register('push', push_one)
