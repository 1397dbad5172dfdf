-- requeue_dead: a dead job ready again, its attempts reset.
-- ARGV[4..5]: id, topic.
register('requeue_dead', function()
  local id, topic, k, j, err = the_job(false)
  if not j then return err end
  if j[ST] ~= DEAD then return {5, j[ST]} end
  advance(k)
  requeue(id, topic, j, k)
  return {0}
end)
