// ShardedEngine::list_jobs() (Queue::list_jobs): each shard lists its part of a page under its
// lock (Core::browse), the parts are merged by the state's key, and the next cursor
// (common/cursor.h) records the last key and, for the ready and dead lines, where each shard
// stopped: the key and the ids (latest first) of the last jobs it contributed, so that the next
// page resumes right after them while they are still in place.
#include <algorithm>

#include "common/cursor.h"
#include "common/flow_rules.h"
#include "common/rules.h"
#include "engine/sharded_engine.h"

namespace delayq::engine {

namespace {

// The ids a line's shard position keeps: enough that cancelling or reserving the last few jobs of
// a page still leaves one to resume after.
constexpr size_t kAnchors = 3;

bool lines(JobState s) {
  return s == JobState::ready || s == JobState::dead;
}

Status damaged_position() {
  return Status(Errc::invalid_argument, "cursor is damaged (a shard position is unreadable)");
}

}  // namespace

Result<JobPage> ShardedEngine::list_jobs(std::string_view topic, JobState state, size_t limit,
                                         std::string_view text) {
  if (closed()) return closed_status();
  if (Status s = rules::check_topic(topic); !s.ok()) return s;
  if (Status s = rules::check_list_limit(limit); !s.ok()) return s;
  if (static_cast<unsigned>(state) > static_cast<unsigned>(JobState::dead))
    return Status(Errc::invalid_argument, "state must be delayed, ready, reserved or dead");
  std::optional<cursor::Cursor> from;
  if (!text.empty()) {
    Result<cursor::Cursor> c = cursor::decode(text, topic, state);
    if (!c) return c.status();
    from = std::move(c).value();
  }
  const size_t n = shards_.size();
  // Positions from a cursor of a queue with another shard count do not apply: such a page
  // resumes by key alone.
  std::vector<std::string> pos(n);
  if (from && lines(state) && from->shards.size() == n) pos = from->shards;

  std::vector<std::vector<Core::BrowseItem>> parts(n);
  std::vector<std::vector<std::string>> anchors(n);  // the old anchors, per shard
  int64_t elsewhere = 0;  // jobs of the topic not in memory (a tiered store's disk-only jobs)
  for (size_t s = 0; s < n; ++s) {
    Core::BrowseFrom f;
    const Core::BrowseFrom* fp = nullptr;
    if (lines(state) && !pos[s].empty()) {
      std::optional<std::vector<std::string>> items = cursor::unpack(pos[s]);
      if (!items || items->empty()) return damaged_position();
      std::optional<cursor::Key> k = cursor::key_from_bytes(items->front());
      if (!k) return damaged_position();
      f.key = *k;
      anchors[s].assign(items->begin() + 1, items->end());
      f.anchors = anchors[s];
      fp = &f;
    } else if (from && (!lines(state) || from->shards.size() != n)) {
      f.key = from->boundary;
      f.equal_is_after = s > from->boundary.shard;
      fp = &f;
    }
    // One more than the page, so that the merge knows whether anything is left.
    Shard& shard = *shards_.all()[s];
    parts[s] = shards_.apply(shard, [&](Core& c, TimePoint now) {
      if (state == JobState::delayed) elsewhere += shards_.placement().shard_out_of_memory(shard, topic);
      return c.browse(topic, state, fp, limit + 1, now);
    });
  }
  if (state == JobState::delayed) {
    elsewhere += shards_.placement().stored_out_of_memory(topic);
    // Every disk-only job is due after every delayed job in memory, so the pages could list the
    // memory jobs first; the disk part is not written yet, and a listing that silently ends at
    // the horizon would be wrong. Refused instead, saying why.
    if (elsewhere > 0)
      return Status(Errc::invalid_argument,
                    "list_jobs cannot list the delayed jobs of topic '" + std::string(topic) +
                        "' yet: " + std::to_string(elsewhere) +
                        " of them are on disk (the tiered store's disk tier keeps jobs due "
                        "beyond its horizon there), and listing disk jobs is not supported yet");
  }

  // Merge: repeatedly the smallest head by (key, shard).
  JobPage page;
  std::vector<size_t> next(n, 0);
  std::vector<std::vector<std::string>> taken(n);
  std::optional<cursor::Key> last;
  while (page.jobs.size() < limit) {
    size_t best = n;
    for (size_t s = 0; s < n; ++s)
      if (next[s] < parts[s].size() &&
          (best == n || parts[s][next[s]].key < parts[best][next[best]].key))
        best = s;
    if (best == n) break;
    Core::BrowseItem& item = parts[best][next[best]++];
    last = item.key;
    last->shard = static_cast<uint32_t>(best);
    taken[best].push_back(item.info.id);
    page.jobs.push_back(std::move(item.info));
  }
  bool more = false;
  for (size_t s = 0; s < n; ++s) more = more || next[s] < parts[s].size();
  if (!more || !last) return page;

  cursor::Cursor c{.state = state, .topic_fp = cursor::topic_fingerprint(topic), .boundary = *last};
  if (lines(state)) {
    c.shards = pos;
    for (size_t s = 0; s < n; ++s) {
      if (taken[s].empty()) continue;
      std::vector<std::string> items{cursor::key_bytes(parts[s][next[s] - 1].key)};
      for (auto id = taken[s].rbegin(); id != taken[s].rend() && items.size() <= kAnchors; ++id)
        items.push_back(*id);
      for (size_t a = 0; a < anchors[s].size() && items.size() <= kAnchors; ++a)
        items.push_back(anchors[s][a]);
      c.shards[s] = cursor::pack(items);
    }
  }
  page.cursor = cursor::encode(c);
  return page;
}

}  // namespace delayq::engine
