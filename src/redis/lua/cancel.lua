-- cancel: a job deleted, in any state.
-- ARGV[4..5]: id, topic.
register('cancel', function()
  local id, topic, k, j, err = the_job(false)
  if not j then return err end
  local was = j[ST]
  erase(id, topic, j, k)
  count('cancelled')
  if was == RESERVED and freed(topic) then return {0, 1} end
  return {0}
end)
