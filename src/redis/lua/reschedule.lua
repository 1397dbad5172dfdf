-- reschedule: a delayed or ready job given a new due time.
-- ARGV[4..6]: id, topic, new due time (µs).
register('reschedule', function()
  local id, topic, k, j, err = the_job(false)
  if not j then return err end
  if j[ST] == RESERVED or j[ST] == DEAD then return {5, j[ST]} end
  local when = tonumber(ARGV[6])
  if when > NOW + MAXD then return {1, when - NOW} end
  advance(k)
  j = load(id)
  detach(id, j, k)
  schedule(id, topic, j, when, k)
  save(id, topic, j)
  return {0}
end)
