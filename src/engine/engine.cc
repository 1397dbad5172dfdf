// The Engine's public calls: each checks that the queue is open and runs on the shard that owns
// its job (engine_impl.h holds the shards, the driver and the waiting).
#include "engine/engine_impl.h"

#include <algorithm>
#include <deque>

namespace delayq {

Result<std::unique_ptr<Engine>> Engine::open(const EngineOptions& options) {
  return engine::open_engine(options, nullptr, {}, Stats{});
}

// Rebuilds the shards from a store's records. The calling thread reads and decodes records (the
// RecordSource) while restorer threads put them into their shards, so that reading and
// rebuilding overlap. Records travel in batches; every restorer sees every batch and takes the
// records of its own shards, so each shard still receives its records in seq order.
// A record a core refuses is skipped and reported when `skip` is set (tolerant), and otherwise
// ends the open with the core's error.
Status Engine::Impl::restore(const engine::RecordSource& records, TimePoint now,
                             const engine::SkipReport& skip) {
  Impl& m = *this;
  using Batch = std::vector<std::pair<uint32_t, engine::JobRecord>>;  // (shard, record)
  constexpr size_t kBatch = 1024, kMaxQueued = 16;
  const size_t hw = std::max(2u, std::thread::hardware_concurrency());
  const size_t workers = std::min(m.shards.size(), hw - 1);

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
        if (Status st = m.shards[shard]->core.restore(std::move(r), now); !st.ok()) {
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
  Status read = records([&](engine::JobRecord&& r) {
    if (failed.load()) return Status(Errc::invalid_argument, "stopped");  // replaced below
    const auto shard = static_cast<uint32_t>(m.shard_index(r.id));
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
  return read;
}

engine::Persistence* engine::persistence_of(Engine& e) noexcept {
  return e.impl_->store.get();
}

Result<std::unique_ptr<Engine>> engine::open_engine(const EngineOptions& options,
                                                    std::unique_ptr<engine::Persistence> store,
                                                    const engine::RecordSource& records,
                                                    const Stats& totals,
                                                    const engine::SkipReport& skip) {
  engine::CoreOptions co;
  co.tick = options.tick;
  co.max_delay = options.max_delay;
  co.max_body_bytes = options.max_body_bytes;
  co.default_ttr = options.default_ttr;
  co.default_retry = options.default_retry;
  if (std::string why = engine::validate(co); !why.empty())
    return Status(Errc::invalid_argument, "engine options: " + why);
  if (options.timer_slack < Duration::zero() || options.timer_slack > std::chrono::seconds(1))
    return Status(Errc::invalid_argument, "engine options: timer_slack must be between 0 and 1 s, got " +
                                              format_duration(options.timer_slack));
  if (options.shards < 1 || options.shards > 1024)
    return Status(Errc::invalid_argument, "engine options: shards must be between 1 and 1024, got " +
                                              std::to_string(options.shards));
  auto impl = std::make_unique<Engine::Impl>();
  impl->opt = options;
  impl->clock = options.clock ? options.clock : &SystemClock::instance();
  const uint64_t seed = options.seed ? options.seed : std::random_device()();
  const TimePoint now = impl->clock->now();
  const engine::Counters recorded = store ? store->recorded_counters() : engine::Counters{};
  // restore() raises fences further if a record holds a higher one.
  impl->fences.store(std::max(restart_safe_base(), recorded.fences));
  impl->next_id.store(std::max(restart_safe_base(), recorded.next_id));
  if (store) store->track(&impl->fences, &impl->next_id);
  co.fences = &impl->fences;
  co.seqs = &impl->seqs;
  co.record_changes = store != nullptr;
  for (size_t i = 0; i < options.shards; ++i) {
    co.seed = seed + i;
    impl->shards.push_back(std::make_unique<Shard>(co, now, impl->io));
  }
  if (records)
    if (Status st = impl->restore(records, now, skip); !st.ok()) return st;
  impl->shards[0]->core.restore_totals(totals);
  impl->store = std::move(store);
  impl->work.emplace(impl->io.get_executor());
  Engine::Impl* raw = impl.get();
  impl->driver = std::thread([raw] { raw->io.run(); });
  if (impl->clock->manual())
    impl->clock_subscription = impl->clock->subscribe([raw] { raw->on_manual_clock(); });
  std::unique_ptr<Engine> e(new Engine(std::move(impl)));
  // Catch up with the time that passed while the queue was down: overdue jobs become ready in
  // due order, leases that ran out are retried (and journaled).
  for (auto& s : raw->shards) {
    const Status caught_up = raw->with_shard(*s, [](engine::Core& c, TimePoint t) {
      c.advance(t);
      return Status();
    });
    if (!caught_up.ok()) return caught_up;  // the store could not record the catch-up
  }
  return e;
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Engine::~Engine() {
  close();
  // Destroying the engine from one of its own reserve_async callbacks would free the driver
  // thread's state under its feet: a programming error, reported rather than left undefined.
  if (std::this_thread::get_id() == impl_->driver.get_id()) {
    std::fprintf(stderr, "delayq: an Engine was destroyed from its own reserve_async callback\n");
    std::abort();
  }
  join_driver();
}

void Engine::close() {
  Impl& m = *impl_;
  {
    std::lock_guard lock(m.async_mu);
    // `shut`, not `closed`: a failed store write sets `closed` to stop serving, and the
    // driver must still be shut down here afterwards.
    if (m.shut.exchange(true)) return;
    m.closed.store(true);
  }
  if (m.clock_subscription) m.clock->unsubscribe(m.clock_subscription);
  {
    std::lock_guard lock(m.wait_mu);
  }
  m.cv.notify_all();
  auto stop_driver = [&m] {
    for (auto& w : m.async_waiters) m.finish(w, closed_error());
    m.async_waiters.clear();
    for (auto& s : m.shards) s->timer.cancel();
    m.io.stop();
  };
  m.work.reset();
  if (std::this_thread::get_id() == m.driver.get_id()) {
    // Called from a reserve_async callback, on the driver thread itself: it cannot wait for
    // itself. Stop it here; it ends when the callback returns, and the destructor joins it.
    stop_driver();
    return;
  }
  asio::post(m.io, stop_driver);
  join_driver();
}

void Engine::join_driver() {
  Impl& m = *impl_;
  if (!m.driver.joinable()) return;
  m.driver.join();
  // Handlers queued behind the stop (async waits registered before `closed` was set, timer
  // re-arms from racing calls) run here: each sees `closed` and finishes at once.
  m.io.restart();
  m.io.poll();
}

Clock& Engine::clock() { return *impl_->clock; }

Result<std::string> Engine::push(JobSpec spec) {
  Impl& m = *impl_;
  if (m.closed.load()) return m.closed_status();
  const bool generated = spec.id.empty();
  for (;;) {
    if (generated) spec.id = to_base36(m.next_id.fetch_add(1));
    std::string id = spec.id;
    Status s = m.with_shard(m.shard_for(id), [&](Core& c, TimePoint now) {
      return c.push(std::move(spec), now);
    });
    if (s.ok()) return id;
    // A generated id that a user happened to take already: draw the next one.
    if (!(generated && s.is(Errc::duplicate_id))) return s;
  }
}

std::vector<Result<std::string>> Engine::push_batch(std::vector<JobSpec> specs) {
  Impl& m = *impl_;
  std::vector<Result<std::string>> out;
  out.reserve(specs.size());
  if (m.shards.size() > 1) {
    for (JobSpec& s : specs) out.push_back(push(std::move(s)));
    return out;
  }
  if (m.closed.load()) {
    for (size_t i = 0; i < specs.size(); ++i) out.push_back(m.closed_status());
    return out;
  }
  // One shard: one lock (and one journal write) for the whole batch.
  const Status written = m.with_shard(*m.shards[0], [&](Core& c, TimePoint now) {
    for (JobSpec& spec : specs) {
      const bool generated = spec.id.empty();
      for (;;) {
        if (generated) spec.id = to_base36(m.next_id.fetch_add(1));
        std::string id = spec.id;
        Status s = c.push(std::move(spec), now);
        if (s.ok()) {
          out.emplace_back(std::move(id));
          break;
        }
        if (!(generated && s.is(Errc::duplicate_id))) {
          out.emplace_back(std::move(s));
          break;
        }
      }
    }
    return Status();
  });
  // The batch's journal write failed: none of its pushes may be reported as done.
  if (!written.ok())
    for (Result<std::string>& r : out)
      if (r.ok()) r = written;
  return out;
}

Result<Delivery> Engine::reserve(std::span<const std::string> topics, Duration timeout) {
  return impl_->reserve(topics, timeout, nullptr);
}

Result<Delivery> Engine::reserve_interruptible(std::span<const std::string> topics,
                                               Duration timeout, const std::atomic<bool>& stop) {
  return impl_->reserve(topics, timeout, &stop);
}

void Engine::wake_waiters() {
  { std::lock_guard lock(impl_->wait_mu); }
  impl_->cv.notify_all();
}

void Engine::reserve_async(std::vector<std::string> topics, Duration timeout,
                           std::function<void(Result<Delivery>)> done) {
  Impl& m = *impl_;
  if (topics.empty()) {
    done(Status(Errc::invalid_argument, "reserve needs at least one topic"));
    return;
  }
  std::unique_lock lock(m.async_mu);
  if (m.closed.load()) {
    lock.unlock();
    done(m.closed_status());
    return;
  }
  auto w = std::make_shared<AsyncWaiter>();
  w->topics = std::move(topics);
  w->done = std::move(done);
  m.async_pending.fetch_add(1);
  asio::post(m.io, [&m, w, timeout] {
    if (m.closed.load()) return m.finish(w, m.closed_status());
    Result<Delivery> r = m.try_reserve(w->topics);
    if (!r.is(Errc::timeout)) return m.finish(w, std::move(r));
    w->pos = m.async_waiters.insert(m.async_waiters.end(), w);
    w->listed = true;
    for (auto& s : m.shards) m.arm_timer(*s);  // the driver's timer now has someone to serve
    if (timeout < kForever) {
      w->timer = std::make_unique<asio::steady_timer>(m.io);
      w->timer->expires_after(std::max(timeout, Duration::zero()));
      w->timer->async_wait([&m, w, r](const boost::system::error_code& ec) {
        if (!ec) m.expire(w, r.status());
      });
    }
  });
}

Status Engine::ack(const Token& t) {
  if (impl_->closed.load()) return impl_->closed_status();
  return impl_->with_shard(impl_->shard_for(t.id),
                           [&](Core& c, TimePoint now) { return c.ack(t, now); });
}

Status Engine::nack(const Token& t, std::optional<Duration> delay) {
  if (impl_->closed.load()) return impl_->closed_status();
  return impl_->with_shard(impl_->shard_for(t.id),
                           [&](Core& c, TimePoint now) { return c.nack(t, delay, now); });
}

Status Engine::dead_letter(const Token& t) {
  if (impl_->closed.load()) return impl_->closed_status();
  return impl_->with_shard(impl_->shard_for(t.id),
                           [&](Core& c, TimePoint now) { return c.dead_letter(t, now); });
}

Result<TimePoint> Engine::touch(const Token& t) {
  if (impl_->closed.load()) return impl_->closed_status();
  return impl_->with_shard(impl_->shard_for(t.id),
                           [&](Core& c, TimePoint now) { return c.touch(t, now); });
}

Status Engine::cancel(std::string_view id) {
  if (impl_->closed.load()) return impl_->closed_status();
  return impl_->with_shard(impl_->shard_for(id),
                           [&](Core& c, TimePoint now) { return c.cancel(id, now); });
}

Result<JobInfo> Engine::get(std::string_view id) {
  if (impl_->closed.load()) return impl_->closed_status();
  return impl_->with_shard(impl_->shard_for(id),
                           [&](Core& c, TimePoint now) { return c.get(id, now); });
}

Status Engine::reschedule(std::string_view id, TimePoint when) {
  if (impl_->closed.load()) return impl_->closed_status();
  return impl_->with_shard(impl_->shard_for(id),
                           [&](Core& c, TimePoint now) { return c.reschedule(id, when, now); });
}

Result<std::vector<JobInfo>> Engine::list_dead(std::string_view topic, size_t limit) {
  if (impl_->closed.load()) return impl_->closed_status();
  std::vector<JobInfo> all;
  for (auto& s : impl_->shards) {
    std::vector<JobInfo> part = impl_->with_shard(
        *s, [&](Core& c, TimePoint now) { return c.list_dead(topic, limit, now); });
    all.insert(all.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  if (impl_->shards.size() > 1)
    std::stable_sort(all.begin(), all.end(),
                     [](const JobInfo& a, const JobInfo& b) { return a.due < b.due; });
  if (all.size() > limit) all.resize(limit);
  return all;
}

Status Engine::requeue_dead(std::string_view id) {
  if (impl_->closed.load()) return impl_->closed_status();
  return impl_->with_shard(impl_->shard_for(id),
                           [&](Core& c, TimePoint now) { return c.requeue_dead(id, now); });
}

Result<uint64_t> Engine::requeue_dead_topic(std::string_view topic) {
  return impl_->sum_over_shards([&](Core& c, TimePoint now) { return c.requeue_dead_topic(topic, now); });
}

Result<uint64_t> Engine::purge_dead(std::string_view topic) {
  return impl_->sum_over_shards([&](Core& c, TimePoint now) { return c.purge_dead(topic, now); });
}

Status Engine::health() {
  // closed_status() is the failure the engine stopped on, if any, else "closed".
  return impl_->closed.load() ? impl_->closed_status() : Status();
}

Stats Engine::stats() {
  Stats st;
  for (auto& s : impl_->shards)
    impl_->with_shard(*s, [&](Core& c, TimePoint now) {
      c.advance(now);  // counts as of now, not as of the last call
      c.add_stats(st);
      return 0;
    });
  return st;
}

}  // namespace delayq
