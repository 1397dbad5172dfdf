// RedisQueue::list_jobs (issue 22): the list_jobs script (lua/list_jobs.lua) on every shard, each
// from where its previous page stopped, the shards' rows merged by the state's key (cursor.h),
// and a cursor (common/cursor.h) that keeps each shard's position. docs/redis.md, "Browsing".
#include <cstddef>
#include <utility>

#include "common/cursor.h"
#include "common/flow_rules.h"
#include "common/rules.h"
#include "redis/redis_queue.h"

namespace delayq::redis {
namespace {

// The fields of one row of the script's reply: info(), a position of 3 strings, a seq.
constexpr size_t kRowFields = kJobInfoFields + 4;

struct Row {
  JobInfo job;
  std::vector<std::string> position;  // as the script takes it back
  cursor::Key key;
};

int64_t ns(TimePoint t) {
  return t.time_since_epoch().count();
}

// The merge key of a job listed in `state` (cursor.h): delayed (due, push seq), ready (priority,
// due, line seq), reserved (lease deadline, push seq), dead (when it died, death seq); the
// shard breaks ties.
cursor::Key key_of(const JobInfo& j, JobState state, uint64_t seq, uint32_t shard) {
  switch (state) {
    case JobState::delayed:
      return {0, ns(j.due), seq, shard};
    case JobState::ready:
      return {j.priority, ns(j.due), seq, shard};
    case JobState::reserved:
      return {0, ns(j.lease_deadline), seq, shard};
    case JobState::dead:
      break;
  }
  return {0, ns(j.dead_since), seq, shard};
}

Status bad_reply() {
  return Status(Errc::corrupt, "list_jobs: the server's reply is malformed");
}

Result<std::vector<Row>> read_rows(Reply r, std::string_view topic, JobState state,
                                   uint32_t shard) {
  if (r.type != Reply::Type::array || r.elements.empty() || r.elements[0].as_int(-1) != 0 ||
      (r.elements.size() - 1) % kRowFields != 0)
    return bad_reply();
  std::vector<Reply>& e = r.elements;
  std::vector<Row> rows;
  for (size_t i = 1; i + kRowFields <= e.size(); i += kRowFields) {
    Row row;
    row.job = read_job_info(e, i, std::string(topic));
    for (size_t p = 0; p < 3; ++p) row.position.push_back(std::move(e[i + kJobInfoFields + p].str));
    const int64_t seq = e[i + kJobInfoFields + 3].as_int(-1);
    if (seq < 0 || row.job.state != state) return bad_reply();
    row.key = key_of(row.job, state, static_cast<uint64_t>(seq), shard);
    rows.push_back(std::move(row));
  }
  return rows;
}

// Where shard `shard` resumes when it has no position of its own but a page was listed before:
// delayed and reserved jobs after the boundary's key (those of the shard at the boundary's
// instant come after it when the shard is greater, or when their push seq is). Ready and dead
// jobs start from the shard's first (list_jobs() then passes those not after the boundary).
std::vector<std::string> from_boundary(const cursor::Cursor& c, uint32_t shard) {
  if (c.state != JobState::delayed && c.state != JobState::reserved) return {"", "", ""};
  const cursor::Key& b = c.boundary;
  const int64_t after = shard > b.shard ? static_cast<int64_t>(b.seq) - 1 : static_cast<int64_t>(b.seq);
  return {std::to_string(b.at / 1000), std::to_string(after), ""};
}

// An integer as the script writes it (%.0f): digits, a '-' first for a time before 1970.
bool decimal(std::string_view s) {
  if (s.starts_with('-')) s.remove_prefix(1);
  if (s.empty() || s.size() > 19) return false;
  for (char ch : s)
    if (ch < '0' || ch > '9') return false;
  return true;
}

// Whether a shard position reads as the script's (a forged cursor can pass the checksum): delayed
// and reserved {score, push seq, ''}, dead {score, '', ''}, ready {'r', seq, ''} or {'q',
// priority, member of 8 bytes and an id}; all '' for a shard's start.
bool valid_position(JobState state, const std::vector<std::string>& p) {
  if (p.size() != 3) return false;
  if (p[0].empty()) return p[1].empty() && p[2].empty();
  switch (state) {
    case JobState::delayed:
    case JobState::reserved:
      return decimal(p[0]) && decimal(p[1]) && p[2].empty();
    case JobState::dead:
      return decimal(p[0]) && p[1].empty() && p[2].empty();
    case JobState::ready:
      break;
  }
  if (p[0] == "r") return decimal(p[1]) && p[2].empty();
  return p[0] == "q" && decimal(p[1]) && p[1].size() <= 10 && p[2].size() > 8 &&
         p[2].size() <= 8 + kMaxIdBytes;
}

}  // namespace

Result<JobPage> RedisQueue::list_jobs(std::string_view topic, JobState state, size_t limit,
                                      std::string_view cursor_text) {
  if (shut()) return shut_status();
  if (Status s = rules::check_topic(topic); !s.ok()) return s;
  if (Status s = rules::check_list_limit(limit); !s.ok()) return s;
  const size_t n = keys_.size();
  cursor::Cursor c{.state = state, .topic_fp = cursor::topic_fingerprint(topic)};
  c.shards.assign(n, std::string());
  const bool resumed = !cursor_text.empty();
  if (resumed) {
    Result<cursor::Cursor> got = cursor::decode(cursor_text, topic, state);
    if (!got) return got.status();
    if (got->shards.size() != n)
      return Status(Errc::invalid_argument,
                    "cursor is damaged: it holds " + std::to_string(got->shards.size()) +
                        " shard positions, the queue has " + std::to_string(n) + " shards");
    c = std::move(*got);
  }

  // Each shard's next rows: one more than a page, to know whether a page follows.
  std::vector<std::vector<Row>> rows(n);
  for (uint32_t s = 0; s < n; ++s) {
    std::vector<std::string> pos;
    if (!c.shards[s].empty()) {
      std::optional<std::vector<std::string>> parts = cursor::unpack(c.shards[s]);
      if (!parts || !valid_position(state, *parts))
        return Status(Errc::invalid_argument, "cursor is damaged (a shard position does not read)");
      pos = std::move(*parts);
    } else {
      pos = resumed ? from_boundary(c, s) : std::vector<std::string>{"", "", ""};
    }
    const ShardKeys& sh = keys_.shards()[s];
    // A shard no page took a job from yet skips its first jobs that are not after the boundary:
    // they entered the state before the cursor's place (from_boundary() already starts its
    // delayed and reserved jobs there). The jobs skipped count as passed: the shard resumes after
    // them from then on.
    const bool untouched = resumed && c.shards[s].empty();
    for (;;) {
      std::vector<std::string> args = common_(sh);
      args.push_back(std::to_string(static_cast<int>(state)));
      args.push_back(std::to_string(limit + 1));
      args.insert(args.end(), pos.begin(), pos.end());
      Result<Reply> r = router_.eval(sh.slot, kListJobs, sh.with_topic(topic), args);
      if (!r) return r.status();
      Result<std::vector<Row>> got = read_rows(std::move(*r), topic, state, s);
      if (!got) return got.status();
      size_t passed = 0;
      while (untouched && passed < got->size() && !(c.boundary < (*got)[passed].key)) ++passed;
      if (passed > 0) {
        pos = (*got)[passed - 1].position;
        c.shards[s] = cursor::pack(pos);
        got->erase(got->begin(), got->begin() + static_cast<std::ptrdiff_t>(passed));
      }
      rows[s] = std::move(*got);
      if (passed <= limit || !rows[s].empty()) break;  // else: every row passed, read on
    }
  }

  // Merged: each shard's rows in the shard's order, the smallest head first.
  JobPage page;
  std::vector<size_t> next(n, 0);
  while (page.jobs.size() < limit) {
    std::optional<uint32_t> best;
    for (uint32_t s = 0; s < n; ++s)
      if (next[s] < rows[s].size() && (!best || rows[s][next[s]].key < rows[*best][next[*best]].key))
        best = s;
    if (!best) break;
    Row& row = rows[*best][next[*best]++];
    c.boundary = row.key;
    c.shards[*best] = cursor::pack(row.position);
    page.jobs.push_back(std::move(row.job));
  }
  for (uint32_t s = 0; s < n; ++s)
    if (next[s] < rows[s].size()) {
      page.cursor = cursor::encode(c);
      break;
    }
  return page;
}

}  // namespace delayq::redis
