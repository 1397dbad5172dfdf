-- set_limits (Queue::set_topic_limits, clear_topic_limits): ARGV[4] a topic, ARGV[5] its limits
-- as flow.lua reads them, or '' to clear them. Limits equal to the topic's change nothing. New
-- limits keep the whole tokens the bucket lacks (up to the new burst), so that a new rate's next
-- token comes one new interval after the change, and keep the throttled counts; clearing drops
-- the bucket and the counts. Either way the topic's waiting consumers look again. Replies {0}.
register('set_limits', function()
  local t, v = ARGV[4], ARGV[5]
  local old = redis.call('HGET', LIMITS, t)
  if v == '' then
    if not old then return {0} end
    redis.call('HDEL', LIMITS, t)
    redis.call('HDEL', FLOW, 't:' .. t, 'r:' .. t, 'c:' .. t, 'n:' .. t)
    wake(t)
    return {0}
  end
  if old == v then return {0} end
  local L = parse_limits(t, v)
  if not L then return {1, 'bad limits'} end
  local L0, missing = parse_limits(t, old), 0
  if L0 and L0.count > 0 then missing = ceil_div(debt(L0), L0.px) end
  redis.call('HSET', LIMITS, t, v)
  if L.count > 0 then
    set_debt(L, math.min(missing, L.burst) * L.px)
  else
    redis.call('HDEL', FLOW, 't:' .. t)
  end
  wake(t)
  return {0}
end)
