-- ack_claim: ack, then claim of the same topic, in one run (RedisOptions::claim_batch). ARGV[4..6]
-- as ack, ARGV[7] the most jobs to take, ARGV[8] the topic to take them from. They are taken only
-- when the acked job is of that topic (the client may have guessed the job's topic wrong and be
-- calling again with another topic's keys). A consumer loop that acks and reserves again thus needs
-- one round trip and one script run per job instead of two. Replies as ack when the ack is refused,
-- else as claim, {0} included when nothing is ready (the caller then claims the usual way, which
-- tells it how long to wait). ARGV[9] 'm' on a queue of several shards: a topic with limits then
-- takes nothing (the home shard admits its claims) and the reply is {0, 1}, as ack's.
register('ack_claim', function()
  local id, topic, k, j, err = the_job(true)
  if not j then return err end
  erase(id, topic, j, k)
  count('acked')
  local has_limits = freed(topic)
  if has_limits and ARGV[9] == 'm' then return {0, 1} end
  local want = tonumber(ARGV[7])
  if want < 1 or topic ~= ARGV[8] then return {0} end
  advance(k)
  return (take(1, want))  -- an ack, no reserve call: no throttled counts
end)
