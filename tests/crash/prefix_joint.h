// The lanes' cuts put together after a power loss: internal to prefix.cc (prefix.h says what
// the search does).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "prefix_calls.h"

namespace delayq::crash {

// Where a lane's calls are cut: its first `kept` calls kept, and if `partial`, part of the
// next one (a purge_dead on several shards writes each shard's part on its own). A consumer's
// lane cut here needs its feeder lane (the thread that pushed its jobs) to keep at least `lo`
// and at most `hi` calls: every push of a job that the store shows, or that a kept call of the
// consumer's took, kept; every other push of its jobs in the cycle lost.
struct Cut {
  size_t kept = 0;
  bool partial = false;
  size_t lo = 0, hi = SIZE_MAX;
  size_t reach() const { return kept + partial; }
};

// The lanes' searches put together: per lane, its cuts that fit (ascending), and the greatest
// choice of one cut per lane that fits the order of the calls (every constraint below keeps
// more calls of one lane only if others keep more too, so the choices that fit are closed under
// taking the larger cut of each lane: the greatest loses the fewest answered calls).
class Joint {
 public:
  Joint(const std::array<std::vector<Call>, kLanes>& calls,
        const std::array<std::vector<Cut>, kLanes>& fits,
        const std::array<std::optional<size_t>, kLanes>& feeder)
      : calls_(calls), fits_(fits), feeder_(feeder) {
    // need_[t][u][c]: how many of lane u's calls must be kept if lane t keeps c (or part of its
    // call c - 1): those that had returned before t's call c - 1 began (it was written after).
    for (size_t t = 0; t < kLanes; ++t)
      for (size_t u = 0; u < kLanes; ++u) {
        const std::vector<Call>& mine = calls[t];
        const std::vector<Call>& other = calls[u];
        need_[t][u].assign(mine.size() + 1, 0);
        if (t == u) continue;
        size_t k = 0;
        for (size_t c = 1; c <= mine.size(); ++c) {
          while (k < other.size() && other[k].done_at < mine[c - 1].intent_at) ++k;
          need_[t][u][c] = k;
        }
      }
  }

  // The greatest choice that fits, as an index into each lane's fits; empty if none (`why`).
  std::optional<std::array<size_t, kLanes>> solve(std::string* why) {
    std::array<size_t, kLanes> at;
    for (size_t l = 0; l < kLanes; ++l) at[l] = fits_[l].size() - 1;
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t t = 0; t < kLanes; ++t)
        for (size_t u = 0; u < kLanes; ++u) {
          if (t == u) continue;
          while (kept(u, at) < need_[t][u][cut(t, at).reach()]) {
            if (at[t] == 0) {
              *why = order_text(t, u, at);
              return std::nullopt;
            }
            --at[t];
            changed = true;
          }
        }
      for (size_t f = 0; f < kLanes; ++f) {
        if (!feeder_[f]) continue;
        const size_t g = *feeder_[f];
        while (kept(g, at) < cut(f, at).lo || kept(g, at) > cut(f, at).hi) {
          const bool lower_f = kept(g, at) < cut(f, at).lo;
          size_t& i = at[lower_f ? f : g];
          if (i == 0) {
            *why = "no cut of " + lane_name(g) + "'s pushes fits what " + lane_name(f) +
                   "'s calls show of its jobs: " +
                   (lower_f ? "it took a job whose push is lost"
                            : "a job whose push is kept is missing");
            return std::nullopt;
          }
          --i;
          changed = true;
        }
      }
    }
    return at;
  }

 private:
  const Cut& cut(size_t l, const std::array<size_t, kLanes>& at) const { return fits_[l][at[l]]; }
  size_t kept(size_t l, const std::array<size_t, kLanes>& at) const { return cut(l, at).kept; }

  std::string order_text(size_t t, size_t u, const std::array<size_t, kLanes>& at) const {
    const size_t c = cut(t, at).reach();
    const size_t k = need_[t][u][c];
    return "each lane's calls are explained by a prefix of its own, but no choice of them fits "
           "the order in which the calls were made: a call kept that began after a lost call of "
           "another lane had returned (" +
           lane_name(t) + "'s " + call_text(calls_[t][c - 1]) + " began after " + lane_name(u) +
           "'s " + call_text(calls_[u][k - 1]) + " had returned)";
  }

  const std::array<std::vector<Call>, kLanes>& calls_;
  const std::array<std::vector<Cut>, kLanes>& fits_;
  const std::array<std::optional<size_t>, kLanes>& feeder_;
  std::array<std::array<std::vector<size_t>, kLanes>, kLanes> need_;
};

}  // namespace delayq::crash
