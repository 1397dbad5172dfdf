// Rebuilding the shards from a store's records (see restore.h).
#include "engine/restore.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <thread>

namespace delayq::engine {

Status restore(Shards& shards, const RecordSource& records, TimePoint now, const SkipReport& skip) {
  // Records travel in batches; every restorer sees every batch and takes the records of its own
  // shards (shard % workers).
  using Batch = std::vector<std::pair<uint32_t, JobRecord>>;  // (shard, record)
  constexpr size_t kBatch = 1024, kMaxQueued = 16;
  const size_t hw = std::max(2u, std::thread::hardware_concurrency());
  const size_t workers = std::min(shards.size(), hw - 1);

  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::deque<std::shared_ptr<Batch>>> queues(workers);
  bool finished = false;
  Status failure;  // the first restore() error; guarded by mu
  std::atomic<bool> failed{false};

  auto restorer = [&](size_t w) {
    for (;;) {
      std::shared_ptr<Batch> batch;
      {
        std::unique_lock l(mu);
        cv.wait(l, [&] { return !queues[w].empty() || finished; });
        if (queues[w].empty()) return;
        batch = std::move(queues[w].front());
        queues[w].pop_front();
      }
      cv.notify_all();  // the reader may be waiting for room
      if (failed.load()) continue;
      for (auto& [shard, r] : *batch) {
        if (shard % workers != w) continue;
        if (Status st = shards[shard].core.restore(std::move(r), now); !st.ok()) {
          std::lock_guard l(mu);
          if (skip && st.is(Errc::corrupt)) {
            skip(st.message());
            continue;
          }
          if (!failed.exchange(true)) failure = st;
          break;
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w) threads.emplace_back(restorer, w);

  auto batch = std::make_shared<Batch>();
  batch->reserve(kBatch);
  auto hand_over = [&] {
    std::unique_lock l(mu);
    cv.wait(l, [&] { return queues[0].size() < kMaxQueued || failed.load(); });
    for (auto& q : queues) q.push_back(batch);
    l.unlock();
    cv.notify_all();
    batch = std::make_shared<Batch>();
    batch->reserve(kBatch);
  };
  Status read = records([&](JobRecord&& r) {
    if (failed.load()) return Status(Errc::invalid_argument, "stopped");  // replaced below
    const auto shard = static_cast<uint32_t>(shards.index_of(r.id));
    batch->emplace_back(shard, std::move(r));
    if (batch->size() == kBatch) hand_over();
    return Status();
  });
  if (!batch->empty()) hand_over();
  {
    std::lock_guard l(mu);
    finished = true;
  }
  cv.notify_all();
  for (auto& t : threads) t.join();
  if (failed.load()) return failure;
  for (size_t i = 0; i < shards.size(); ++i) shards[i].core.finish_restore();  // dead lines
  return read;
}

}  // namespace delayq::engine
