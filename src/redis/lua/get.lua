-- get: a job's fields and body.
-- ARGV[4..5]: id, topic. Replies {0, id, state, attempts, max_attempts, due, lease, ttr, body,
-- policy, priority, topic}.
register('get', function()
  local id, topic, k, j, err = the_job(false)
  if not j then return err end
  local r = info(id, j)
  table.insert(r, 1, 0)
  r[#r + 1] = topic
  return r
end)
