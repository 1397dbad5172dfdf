// The core's part of list_jobs(): browse(), one page of a topic's jobs in one state in that
// state's order (its helpers browse_lines(), browse_delayed(), browse_reserved(), key_of()), and
// finish_restore(), which puts the dead lines in death order after a restore.
//
// Each state's order, and what a page walks:
//   ready     the ready lines in hand-out order (ready_lines()), key (priority, due, seq);
//   dead      the dead line, in the order the jobs died, key (dead since, seq);
//   delayed   by (due, seq): the topic's DueBins second by second, each second's list sorted;
//   reserved  by (lease deadline, seq): the topic's reserved line, sorted per page.
// The lines resume after the cursor's job itself, or at the job that followed it, when one of them
// is still there (the anchors), so that a page costs the page; the other two resume by key.
#include <algorithm>
#include <optional>
#include <utility>

#include "engine/core.h"

namespace delayq::engine {

namespace {
// Compares keys without their shard.
int compare(const cursor::Key& a, const cursor::Key& b) {
  if (a.priority != b.priority) return a.priority < b.priority ? -1 : 1;
  if (a.at != b.at) return a.at < b.at ? -1 : 1;
  if (a.seq != b.seq) return a.seq < b.seq ? -1 : 1;
  return 0;
}
bool after(const cursor::Key& k, const Core::BrowseFrom* from) {
  if (!from) return true;
  const int c = compare(k, from->key);
  return c > 0 || (c == 0 && from->equal_is_after);
}
bool before(const cursor::Key& a, const cursor::Key& b) {
  return compare(a, b) < 0;
}
}  // namespace

cursor::Key Core::key_of(const Job& j) const {
  switch (j.state) {
    case JobState::delayed:
      return cursor::Key{0, j.due.time_since_epoch().count(), j.seq, 0};
    case JobState::ready:
      return cursor::Key{ready_priority(j), j.due.time_since_epoch().count(), j.seq, 0};
    case JobState::reserved:
    case JobState::dead:  // lease_deadline holds when it died (to_dead())
      break;
  }
  return cursor::Key{0, j.lease_deadline.time_since_epoch().count(), j.seq, 0};
}

std::vector<Core::Line> Core::ready_lines(uint32_t ti) const {
  const Topic& t = topics_[ti];
  std::vector<Line> lines;
  if (t.more)
    for (const auto& [priority, line] : t.more->line)
      if (priority < kDefaultPriority) lines.push_back(Line{&line, priority});
  lines.push_back(Line{&t.ready, kDefaultPriority});
  if (t.more)
    for (const auto& [priority, line] : t.more->line)
      if (priority > kDefaultPriority) lines.push_back(Line{&line, priority});
  return lines;
}

std::vector<Core::BrowseItem> Core::browse(std::string_view topic, JobState state,
                                           const BrowseFrom* from, size_t limit, TimePoint now) {
  advance(now);
  std::vector<BrowseItem> out;
  auto it = topic_ids_.find(topic);
  if (it == topic_ids_.end() || limit == 0) return out;
  const uint32_t ti = it->second;
  switch (state) {
    case JobState::delayed:
      browse_delayed(ti, from, limit, now, out);
      break;
    case JobState::ready:
      browse_lines(ti, state, ready_lines(ti), from, limit, out);
      break;
    case JobState::reserved:
      browse_reserved(ti, from, limit, out);
      break;
    case JobState::dead:
      browse_lines(ti, state, {Line{&topics_[ti].dead, 0}}, from, limit, out);
      break;
  }
  return out;
}

void Core::browse_lines(uint32_t ti, JobState s, const std::vector<Line>& lines,
                        const BrowseFrom* from, size_t limit, std::vector<BrowseItem>& out) {
  // Where to start (see BrowseFrom). Right after the job this core listed last, or at the one
  // that followed it: what comes next was not listed (exact, whatever the keys). From an older
  // anchor or a line's head, jobs up to the last key listed are skipped.
  size_t line = 0;
  uint32_t j = lines.empty() ? kNil : lines[0].list->head;
  bool exact = !from;
  // The job `id` if it is in one of `lines`, with its line.
  const auto in_line = [&](const std::string& id) -> std::optional<std::pair<size_t, uint32_t>> {
    if (id.empty()) return std::nullopt;
    const int64_t at = lookup(id, IdIndex::hash(id));
    if (at < 0) return std::nullopt;
    const Job& job = jobs_[at];
    if (job.topic != ti || job.state != s) return std::nullopt;
    const uint32_t p = key_of(job).priority;
    auto l = std::find_if(lines.begin(), lines.end(), [&](const Line& x) { return x.priority == p; });
    if (l == lines.end()) return std::nullopt;
    return std::pair{static_cast<size_t>(l - lines.begin()), static_cast<uint32_t>(at)};
  };
  if (from) {
    std::optional<std::pair<size_t, uint32_t>> found;
    if (!from->anchors.empty() && (found = in_line(from->anchors[0]))) {
      j = jobs_[found->second].next;
      exact = true;
    } else if ((found = in_line(from->next))) {
      j = found->second;
      exact = true;
    } else {
      for (size_t a = 1; a < from->anchors.size() && !found; ++a)
        if ((found = in_line(from->anchors[a]))) j = jobs_[found->second].next;
    }
    if (found) line = found->first;
  }
  for (;;) {
    while (j == kNil) {
      if (++line >= lines.size()) return;
      j = lines[line].list->head;
    }
    const Job& job = jobs_[j];
    const cursor::Key k = key_of(job);
    if (exact || after(k, from)) {
      out.push_back(BrowseItem{k, info(j)});
      if (out.size() >= limit) return;
    }
    j = job.next;
  }
}

void Core::browse_delayed(uint32_t ti, const BrowseFrom* from, size_t limit, TimePoint now,
                          std::vector<BrowseItem>& out) {
  const DueBins& bins = topics_[ti].due;
  // Every delayed job is due after `now` (advance() ran): the walk starts at now's second, or at
  // the boundary's when that is later.
  int64_t sec = DueBins::second_of(now);
  if (from) sec = std::max(sec, DueBins::second_of(TimePoint(Duration(from->key.at))));
  std::vector<std::pair<cursor::Key, uint32_t>> batch;
  while (out.size() < limit) {
    const std::optional<int64_t> s = bins.next_second(sec);
    if (!s) return;
    batch.clear();
    for (uint32_t j = bins.first_in_second(*s); j != kNil; j = jobs_[j].next)
      if (const cursor::Key k = key_of(jobs_[j]); after(k, from)) batch.emplace_back(k, j);
    // Only what the page still takes is sorted (a second may hold many jobs).
    const size_t take = std::min(batch.size(), limit - out.size());
    const auto by_key = [](const auto& a, const auto& b) { return before(a.first, b.first); };
    std::partial_sort(batch.begin(), batch.begin() + static_cast<ptrdiff_t>(take), batch.end(),
                      by_key);
    for (size_t i = 0; i < take; ++i) out.push_back(BrowseItem{batch[i].first, info(batch[i].second)});
    sec = *s + 1;
  }
}

void Core::browse_reserved(uint32_t ti, const BrowseFrom* from, size_t limit,
                           std::vector<BrowseItem>& out) {
  std::vector<std::pair<cursor::Key, uint32_t>> all;
  for (uint32_t j = topics_[ti].reserved.head; j != kNil; j = jobs_[j].next)
    if (const cursor::Key k = key_of(jobs_[j]); after(k, from)) all.emplace_back(k, j);
  const size_t take = std::min(all.size(), limit);
  std::partial_sort(all.begin(), all.begin() + static_cast<ptrdiff_t>(take), all.end(),
                    [](const auto& a, const auto& b) { return before(a.first, b.first); });
  for (size_t i = 0; i < take; ++i) out.push_back(BrowseItem{all[i].first, info(all[i].second)});
}

void Core::finish_restore() {
  std::vector<uint32_t> line;
  for (Topic& t : topics_) {
    line.clear();
    for (uint32_t j = t.dead.head; j != kNil; j = jobs_[j].next) line.push_back(j);
    if (line.size() < 2) continue;
    std::sort(line.begin(), line.end(), [&](uint32_t a, uint32_t b) {
      return before(key_of(jobs_[a]), key_of(jobs_[b]));
    });
    t.dead = List{};
    for (uint32_t j : line) link(t.dead, j);
  }
}

}  // namespace delayq::engine
