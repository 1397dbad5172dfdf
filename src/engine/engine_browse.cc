// ShardedEngine::list_jobs() (Queue::list_jobs): each shard lists its part of a page under its
// lock (Core::browse), the parts are merged by the state's key, and the next cursor
// (common/cursor.h) records the last key and, for the ready and dead lines, where each shard
// stopped: the key and the ids of the last jobs it contributed (latest first) and of the job that
// followed them, so that the next page resumes right there while one of them is still in place.
#include <algorithm>

#include "common/cursor.h"
#include "common/flow_rules.h"
#include "common/rules.h"
#include "engine/sharded_engine.h"

namespace delayq::engine {

namespace {

// The ids a line's shard position keeps: enough that cancelling or reserving the last few jobs of
// a page still leaves one to resume after.
constexpr size_t kAnchors = 2;

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

  // One part per shard, and for a tiered store's delayed jobs one more: those on disk.
  std::vector<std::vector<Core::BrowseItem>> parts(n + 1);
  std::vector<std::vector<std::string>> anchors(n);  // the old anchors, per shard
  std::vector<Core::BrowseFrom> froms(n);
  std::vector<const Core::BrowseFrom*> fps(n, nullptr);
  for (size_t s = 0; s < n; ++s) {
    Core::BrowseFrom& f = froms[s];
    if (lines(state) && !pos[s].empty()) {
      // The shard's position: its last key, the id of the job after its last one (or ""), then
      // the ids it listed last, latest first.
      std::optional<std::vector<std::string>> items = cursor::unpack(pos[s]);
      if (!items || items->size() < 2) return damaged_position();
      std::optional<cursor::Key> k = cursor::key_from_bytes(items->front());
      if (!k) return damaged_position();
      f.key = *k;
      f.next = (*items)[1];
      anchors[s].assign(items->begin() + 2, items->end());
      f.anchors = anchors[s];
      fps[s] = &f;
    } else if (from) {
      // By key alone: a state without lines, a cursor of another shard count, or a shard that
      // gave the listing nothing yet (every job it held then came after the boundary). A job
      // that entered such a shard before the boundary since is not listed, as on one shard.
      f.key = from->boundary;
      f.equal_is_after = s > from->boundary.shard;
      fps[s] = &f;
    }
  }
  // One more than the page from each part, so that the merge knows whether anything is left.
  std::optional<cursor::Key> read_to;  // the disk read stopped there (see Placement)
  Placement& placement = shards_.placement();
  if (state == JobState::delayed && placement.keeps_jobs_out_of_memory()) {
    // Memory and disk at one moment (every shard's lock), so that no job is missed or listed
    // twice while a refill moves jobs from disk into memory.
    Status failed;
    Status st = shards_.apply_all([&](TimePoint now) -> Result<std::optional<uint64_t>> {
      for (size_t s = 0; s < n; ++s)
        parts[s] = shards_.all()[s]->core.browse(topic, state, fps[s], limit + 1, now);
      std::optional<cursor::Key> after;
      if (from) after = from->boundary;
      Result<Placement::OutOfMemoryPage> disk = placement.browse_out_of_memory(topic, after, limit + 1);
      if (!disk) {
        failed = disk.status();
        return std::optional<uint64_t>();
      }
      parts[n] = std::move(disk->items);
      read_to = disk->read_to;
      return std::optional<uint64_t>();
    });
    if (!failed.ok()) return failed;
    if (!st.ok()) return st;
  } else {
    for (size_t s = 0; s < n; ++s)
      parts[s] = shards_.apply(*shards_.all()[s], [&](Core& c, TimePoint now) {
        return c.browse(topic, state, fps[s], limit + 1, now);
      });
  }

  // Merge: repeatedly the smallest head by (key, shard).
  JobPage page;
  std::vector<size_t> next(n + 1, 0);
  std::vector<std::vector<std::string>> taken(n + 1);
  std::optional<cursor::Key> last;
  bool capped = false;  // stopped at read_to
  while (page.jobs.size() < limit) {
    size_t best = n + 1;
    for (size_t s = 0; s <= n; ++s)
      if (next[s] < parts[s].size() &&
          (best > n || parts[s][next[s]].key < parts[best][next[best]].key))
        best = s;
    if (best > n) break;
    if (read_to && *read_to < parts[best][next[best]].key) {
      capped = true;
      break;
    }
    Core::BrowseItem& item = parts[best][next[best]++];
    last = item.key;
    last->shard = static_cast<uint32_t>(best);
    taken[best].push_back(item.info.id);
    page.jobs.push_back(std::move(item.info));
  }
  bool more = false;
  for (size_t s = 0; s <= n; ++s) more = more || next[s] < parts[s].size();
  // A disk read that stopped early leaves more to read, whether or not it found any of the
  // topic's jobs: the page ends where the read did (it may hold fewer jobs than `limit`, even
  // none), and the next page goes on from there.
  if (read_to) {
    more = true;
    if (capped || page.jobs.size() < limit) {
      last = read_to;
      last->shard = static_cast<uint32_t>(n);
    }
  }
  if (!more || !last) return page;

  cursor::Cursor c{.state = state, .topic_fp = cursor::topic_fingerprint(topic), .boundary = *last};
  if (lines(state)) {
    c.shards = pos;
    for (size_t s = 0; s < n; ++s) {
      if (taken[s].empty()) continue;
      std::vector<std::string> items{cursor::key_bytes(parts[s][next[s] - 1].key),
                                     next[s] < parts[s].size() ? parts[s][next[s]].info.id : ""};
      for (auto id = taken[s].rbegin(); id != taken[s].rend() && items.size() < 2 + kAnchors; ++id)
        items.push_back(*id);
      for (size_t a = 0; a < anchors[s].size() && items.size() < 2 + kAnchors; ++a)
        items.push_back(anchors[s][a]);
      c.shards[s] = cursor::pack(items);
    }
  }
  page.cursor = cursor::encode(c);
  return page;
}

}  // namespace delayq::engine
