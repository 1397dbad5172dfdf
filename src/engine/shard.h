// The threaded machinery of the Engine (internal; included by engine.cc only): shards of Core
// behind mutexes, the driver thread (Asio) that serves reserve_async, how blocked consumers
// wait for jobs and deadlines, and how each call is journaled through the store.
#pragma once

#include <utility>  // before Asio: Boost 1.74 needs it with g++ 12 in C++20

#include "delayq/engine.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <mutex>
#include <random>
#include <stop_token>
#include <thread>

#include "common/format.h"
#include "engine/core.h"
#include "engine/persistence.h"

namespace delayq {

namespace asio = boost::asio;
using engine::Core;
using Steady = std::chrono::steady_clock;

namespace engine_detail {

struct Shard {
  Shard(const engine::CoreOptions& o, TimePoint now, asio::io_context& io)
      : core(o, now), timer(io) {}
  std::mutex mu;
  Core core;
  // Under mu: the shard's next deadline as last looked at (never left in the past by a call),
  // and a copy (ns since the epoch; INT64_MAX for none) that waiters read without the lock.
  std::optional<TimePoint> armed;
  std::atomic<int64_t> armed_ns{INT64_MAX};
  asio::steady_timer timer;  // driver thread only

  void set_armed(std::optional<TimePoint> t) {
    armed = t;
    armed_ns.store(t ? t->time_since_epoch().count() : INT64_MAX);  // seq_cst: see reserve()
  }
};

struct AsyncWaiter {
  std::vector<std::string> topics;
  std::function<void(Result<Delivery>)> done;
  std::stop_token stop;  // requested: withdrawn, reserve nothing more
  // Posts the withdrawal to the driver; registered once the waiter is listed, dropped when it
  // finishes (so it never outlives the engine).
  std::optional<std::stop_callback<std::function<void()>>> on_stop;
  std::unique_ptr<asio::steady_timer> timer;
  std::list<std::shared_ptr<AsyncWaiter>>::iterator pos;  // in async_waiters, once listed
  bool listed = false;
  bool finished = false;
};

// Waits longer than this are treated as "forever" (and keep time_point arithmetic in range).
constexpr Duration kForever = std::chrono::hours(24 * 365 * 100);

// Sleeps are timed on the steady clock, but due times are instants of the wall clock (the
// queue's Clock), which can step. A step back is harmless: a sleeper wakes early, finds nothing
// due and sleeps again, and a call that schedules something earlier wakes it. A step forward
// makes jobs due that a sleeper, counting down the old distance, would not see until it woke.
// So while a deadline is pending, nobody (a thread in reserve(), the driver's timer) sleeps
// longer than this before reading the clock again: after a step forward, what fell due is
// delivered within about this long.
constexpr Duration kClockRecheck = std::chrono::seconds(1);

Status closed_error() { return Status(Errc::closed, "the queue is closed"); }
Status withdrawn_error() {
  return Status(Errc::cancelled, "the reserve was withdrawn (stop requested) before a job came");
}

// Counters that must not repeat across restarts (fences, generated ids) start at least at the
// real time in nanoseconds, and a durable store's above what it recorded (engine::Counters). The
// record is what holds when the wall clock stepped back across the restart; the time is all the
// in-memory engine has, and covers a store that lost its last writes with the power (a mode
// other than Sync::always) while the clock did not step back.
uint64_t restart_safe_base() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace engine_detail

using namespace engine_detail;

struct Engine::Impl {
  EngineOptions opt;
  Clock* clock = nullptr;
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::vector<std::unique_ptr<Shard>> shards;
  std::thread driver;
  std::atomic<bool> closed{false};  // no more calls are served (close() or a failed store write)
  std::atomic<bool> shut{false};    // close() has run
  std::atomic<uint64_t> next_id{1};
  std::atomic<uint32_t> next_shard{0};
  std::atomic<uint64_t> fences{0};  // shared by the shards' cores
  std::atomic<uint64_t> seqs{0};    // job sequence numbers (the journal's keys), shared too
  // The durable store, if any: every call's changes are written to it before the call returns.
  std::unique_ptr<engine::Persistence> store;
  // Set when a write to the store failed: the engine stops (fail-stop) and says why.
  std::mutex failure_mu;
  Status failure;

  Status closed_status() {
    std::lock_guard lock(failure_mu);
    return failure.ok() ? closed_error() : failure;
  }

  // A write to the store failed after the core had applied the call: stop serving, so that
  // nothing the caller was told failed can be handed out. What is on disk stays consistent.
  Status fail(const Status& why) {
    Status s(Errc::io_error, "the store could not be written, so the queue stopped (reopen it to "
                             "continue from what was stored): " + why.to_string());
    {
      std::lock_guard lock(failure_mu);
      if (failure.ok()) failure = s;
    }
    closed.store(true);
    { std::lock_guard lock(wait_mu); }
    cv.notify_all();
    // reserve_async() waiters learn it now, not when their wait runs out (serve_async).
    if (async_pending.load() > 0 && !serve_posted.exchange(true))
      asio::post(io, [this] { serve_async(); });
    return s;
  }
  uint64_t clock_subscription = 0;

  // Consumers blocked in reserve() wait for `epoch` to move.
  std::mutex wait_mu;
  std::condition_variable cv;
  std::atomic<uint64_t> epoch{0};
  std::atomic<int> waiters{0};

  // reserve_async() waiters: the list is touched on the driver thread only. async_mu orders
  // their registration against close(), so none is posted after close() drained the driver.
  std::mutex async_mu;
  std::list<std::shared_ptr<AsyncWaiter>> async_waiters;
  std::atomic<int> async_pending{0};
  std::atomic<bool> serve_posted{false};

  size_t shard_index(std::string_view id) const {
    return shards.size() == 1 ? 0 : std::hash<std::string_view>()(id) % shards.size();
  }
  Shard& shard_for(std::string_view id) { return *shards[shard_index(id)]; }

  // Opening: rebuilds the shards from a store's records (engine.cc).
  Status restore(const engine::RecordSource& records, TimePoint now,
                 const engine::SkipReport& skip);

  // Runs f(core, now) under the shard's lock, then wakes consumers and re-arms the shard's
  // timer if the call made jobs ready or moved the next deadline earlier.
  template <class F>
  auto with_shard(Shard& s, F&& f) {
    bool ready = false, earlier = false;
    std::unique_lock lock(s.mu);
    const TimePoint now = clock->now();
    auto result = f(s.core, now);
    // Journal the call's changes: queued here, in call order, under the lock; written and
    // waited for below, after the lock, so that calls can share writes and fsyncs. The caller
    // learns of the call's effect only once it is durable. (Other callers may act on it a
    // little earlier: a consumer can reserve a job whose push is still being written. Its own
    // reservation is written after the push, so a crash loses both or neither.)
    engine::Effects fx = s.core.take_effects();
    std::optional<uint64_t> ticket;
    if (store && !fx.changes.empty()) {
      Result<uint64_t> w = store->write(fx.changes, fx.totals);
      if (w) {
        ticket = *w;
      } else {
        Status stopped = fail(w.status());
        if constexpr (std::is_constructible_v<decltype(result), Status>) result = stopped;
      }
    }
    ready = fx.made_ready;
    const std::optional<TimePoint>& e = fx.earliest_scheduled;
    if (s.armed && *s.armed <= now) {
      // Every call catches the core up to `now`, so that deadline is behind us now.
      s.set_armed(s.core.next_deadline());
    } else if (e && (!s.armed || *e < *s.armed)) {
      s.set_armed(e);
      earlier = true;
    }
    lock.unlock();
    if (ticket) {
      if (Status d = store->wait_durable(*ticket); !d.ok()) {
        Status stopped = fail(d);
        if constexpr (std::is_constructible_v<decltype(result), Status>) result = stopped;
      }
    }
    if (ready) signal_ready();
    if (earlier && !clock->manual()) {
      // Waiters sleep until the old deadline: let them look again.
      if (waiters.load() > 0) {
        { std::lock_guard l(wait_mu); }
        cv.notify_all();
      }
      if (async_pending.load() > 0) asio::post(io, [this, &s] { arm_timer(s); });
    }
    return result;
  }

  // Driver thread: arms the shard's timer for its next deadline.
  // The driver's timer serves reserve_async() waiters only: threads blocked in reserve() wake
  // for deadlines themselves (see reserve()).
  void arm_timer(Shard& s) {
    if (closed.load() || async_pending.load() == 0) return;
    std::optional<TimePoint> next;
    TimePoint now;
    {
      std::lock_guard lock(s.mu);
      next = s.core.next_deadline();
      s.set_armed(next);
      now = clock->now();
    }
    if (!next) {
      s.timer.cancel();
      return;
    }
    // Timer slack: wake a little after the earliest instant, so that the jobs due within the
    // slack after it fire in the same wake-up instead of one wake-up each (never early).
    s.timer.expires_after(
        std::min(std::max(*next - now, Duration::zero()) + opt.timer_slack, kClockRecheck));
    s.timer.async_wait([this, &s](const boost::system::error_code& ec) {
      if (!ec) on_timer(s);
    });
  }

  // Driver thread: the shard's deadline came.
  void on_timer(Shard& s) {
    with_shard(s, [](Core& c, TimePoint now) {
      c.advance(now);
      return 0;
    });
    arm_timer(s);
  }

  // ManualClock listener: everything due by the clock's new time happens now.
  void on_manual_clock() {
    for (auto& s : shards)
      with_shard(*s, [](Core& c, TimePoint now) {
        c.advance(now);
        return 0;
      });
  }

  void signal_ready() {
    epoch.fetch_add(1);
    if (waiters.load() > 0) {
      { std::lock_guard lock(wait_mu); }
      cv.notify_all();
    }
    if (async_pending.load() > 0 && !serve_posted.exchange(true))
      asio::post(io, [this] { serve_async(); });
  }

  // When to look again: when the earliest shard deadline falls (on the steady clock, as far as
  // the wall clock says now), but no later than kClockRecheck; never when there is no deadline,
  // or when the clock is manual (its moves wake waiters).
  Steady::time_point next_wake() const {
    int64_t due = INT64_MAX;
    for (const auto& s : shards) due = std::min(due, s->armed_ns.load());
    if (due == INT64_MAX || clock->manual()) return Steady::time_point::max();
    const Duration left = Duration(due) - clock->now().time_since_epoch() + opt.timer_slack;
    return Steady::now() + std::clamp(left, Duration::zero(), kClockRecheck);
  }

  // Runs a count-returning core call on every shard and adds the counts up. A shard whose
  // journal write fails ends it with that error (with_shard substitutes it).
  template <class F>
  Result<uint64_t> sum_over_shards(F&& call) {
    if (closed.load()) return closed_status();
    uint64_t n = 0;
    for (auto& s : shards) {
      Result<uint64_t> part = with_shard(*s, [&](Core& c, TimePoint now) -> Result<uint64_t> {
        return call(c, now);
      });
      if (!part) return part;
      n += *part;
    }
    return n;
  }

  // One pass over the shards (starting at a rotating one so no shard is favoured).
  Result<Delivery> try_reserve(std::span<const std::string> topics) {
    const size_t n = shards.size();
    const size_t start = n == 1 ? 0 : next_shard.fetch_add(1) % n;
    for (size_t i = 0; i < n; ++i) {
      Result<Delivery> r = with_shard(*shards[(start + i) % n], [&](Core& c, TimePoint now) {
        return c.reserve(topics, now);
      });
      if (!r.is(Errc::timeout)) return r;
    }
    return rules::reserve_timeout(topics);
  }

  Result<Delivery> reserve(std::span<const std::string> topics, Duration timeout,
                           const std::atomic<bool>* stop) {
    if (Status s = rules::check_topics(topics); !s.ok()) return s;
    const Steady::time_point deadline = Steady::now() + std::clamp(timeout, Duration::zero(), kForever);
    for (;;) {
      if (closed.load()) return closed_status();
      const uint64_t seen = epoch.load();
      Result<Delivery> r = try_reserve(topics);
      if (!r.is(Errc::timeout)) return r;
      // Sleep until a job is made ready (epoch moves) or the next deadline comes: then this
      // thread catches the queue up and takes the job itself. One thread hop from due time to
      // delivery, and any waiting consumer can do it. A call that moves a deadline earlier
      // stores armed_ns, then reads `waiters`; this thread counts itself in `waiters`, then
      // reads armed_ns: with both sequentially consistent, one of them sees the other, so a
      // waiter never sleeps past a deadline it was not told about.
      std::unique_lock lock(wait_mu);
      waiters.fetch_add(1);
      bool timed_out = false;
      while (epoch.load() == seen && !closed.load() && !(stop && stop->load())) {
        const Steady::time_point wake = std::min(deadline, next_wake());
        if (cv.wait_until(lock, wake) == std::cv_status::timeout) {
          timed_out = Steady::now() >= deadline && epoch.load() == seen;
          break;
        }
      }
      waiters.fetch_sub(1);
      if (stop && stop->load()) return Status(Errc::closed, "the consumer was stopped");
      if (timed_out) return r;
    }
  }

  // Driver thread.
  void finish(const std::shared_ptr<AsyncWaiter>& w, Result<Delivery> r) {
    if (w->finished) return;
    w->finished = true;
    async_pending.fetch_sub(1);
    if (w->timer) w->timer->cancel();
    w->on_stop.reset();  // waits for a withdrawal running on another thread: it only posts
    w->done(std::move(r));
  }

  // Driver thread: lists a waiter that found nothing at once, and arms what ends its wait.
  void listen_for(const std::shared_ptr<AsyncWaiter>& w, Duration timeout, const Status& why) {
    w->pos = async_waiters.insert(async_waiters.end(), w);
    w->listed = true;
    for (auto& s : shards) arm_timer(*s);  // the driver's timer now has someone to serve
    if (timeout < kForever) {
      w->timer = std::make_unique<asio::steady_timer>(io);
      w->timer->expires_after(std::max(timeout, Duration::zero()));
      w->timer->async_wait([this, w, why](const boost::system::error_code& ec) {
        if (!ec) expire(w, why);
      });
    }
    if (w->stop.stop_possible()) {
      // Runs at once if the stop came already; else on the thread that requests it.
      w->on_stop.emplace(w->stop, [this, weak = std::weak_ptr<AsyncWaiter>(w)] {
        asio::post(io, [this, weak] {
          if (auto waiter = weak.lock()) expire(waiter, withdrawn_error());
        });
      });
    }
  }

  // Driver thread: a waiter's time ran out.
  void expire(const std::shared_ptr<AsyncWaiter>& w, const Status& why) {
    if (w->finished) return;
    if (w->listed) async_waiters.erase(w->pos);
    w->listed = false;
    finish(w, why);
  }

  // Driver thread: hands ready jobs to async waiters, oldest waiter first.
  void serve_async() {
    serve_posted.store(false);
    for (auto it = async_waiters.begin(); it != async_waiters.end();) {
      if (closed.load()) {
        finish(*it, closed_status());  // the store's failure, if that is why
      } else if ((*it)->stop.stop_requested()) {
        finish(*it, withdrawn_error());  // checked before each try: nothing is reserved after
      } else if (!(*it)->finished) {
        Result<Delivery> r = try_reserve((*it)->topics);
        if (r.is(Errc::timeout)) {
          ++it;
          continue;
        }
        finish(*it, std::move(r));
      }
      (*it)->listed = false;
      it = async_waiters.erase(it);
    }
  }
};

}  // namespace delayq
