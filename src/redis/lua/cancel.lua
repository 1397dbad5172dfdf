-- cancel: a job deleted, in any state.
-- ARGV[4..5]: id, topic.
register('cancel', function()
  local id, topic, k, j, err = the_job(false)
  if not j then return err end
  erase(id, topic, j, k)
  count('cancelled')
  return {0}
end)
