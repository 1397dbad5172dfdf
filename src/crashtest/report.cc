// delayq-crashtest's final report (report.h).
#include "crashtest/report.h"

#include <cstdio>
#include <utility>
#include <vector>

namespace delayq::crashtest {

using namespace crash;

namespace {

bool has(const std::string& s, const char* part) {
  return s.find(part) != std::string::npos;
}

struct PromiseInfo {
  const char* key;  // in JSON
  const char* text;
};
constexpr std::array<PromiseInfo, kPromises> kInfo = {{
    {"answered_calls_lost", "no answered call lost (power loss: no more than the sync mode allows)"},
    {"resurrected", "no job back after it was gone"},
    {"delivered_early", "no delivery before the job's due time"},
    {"state_wrong", "every job's state, due time, attempts and lease as the calls left them"},
    {"batch_within_bound",
     "a power loss takes at most sync_batch_ops - 1 answered calls of Sync::batch (8 - 1 here)"},
    {"no_other_failure", "no call failed and no worker died on its own"},
}};

// The calls made, by kind (both modes' workers, and the drains).
std::vector<std::pair<const char*, uint64_t>> calls_of(const RunResult& r) {
  const Model::Counts& a = r.kill.m.counts;
  const Model::Counts& b = r.power.m.counts;
  auto sum = [&](uint64_t Model::Counts::*f) { return a.*f + b.*f; };
  using C = Model::Counts;
  return {{"push", sum(&C::pushes)},        {"push_batch", sum(&C::batches)},
          {"reserve", sum(&C::deliveries)}, {"ack", sum(&C::acks)},
          {"ack_batch", sum(&C::ack_batches)}, {"nack", sum(&C::nacks)},
          {"dead_letter", sum(&C::dead_letters)}, {"touch", sum(&C::touches)},
          {"release", sum(&C::releases)},   {"cancel", sum(&C::cancels)},
          {"reschedule", sum(&C::reschedules)}, {"requeue_dead", sum(&C::requeues)},
          {"requeue_dead_topic", sum(&C::requeue_topics)}, {"purge_dead", sum(&C::purges)},
          {"pause", sum(&C::pauses)},       {"resume", sum(&C::resumes)},
          {"set_topic_limits", sum(&C::limits_set)},
          {"clear_topic_limits", sum(&C::limits_cleared)}, {"list_jobs", sum(&C::lists)},
          {"consume", sum(&C::consumed)},   {"refused", sum(&C::refused)}};
}

// The calls begun, by the thread that made them (both modes' workers, and the drains, whose
// calls count as a worker thread's and the consumers'): each worker thread of the run (and any
// other that made calls: none should), the consumer thread, the consume() loop.
std::vector<std::pair<std::string, uint64_t>> calls_by_thread(const RunResult& r, size_t threads) {
  auto of = [&](size_t t) {
    return r.kill.m.counts.by_thread[t] + r.power.m.counts.by_thread[t];
  };
  std::vector<std::pair<std::string, uint64_t>> out;
  for (size_t t = 0; t < kMaxThreads; ++t)
    if (t < threads || of(t) > 0) out.emplace_back("thread " + std::to_string(t), of(t));
  out.emplace_back("consumer", of(kConsumer));
  out.emplace_back("consume()", of(kConsumeAcks) + of(kConsumeReserves));
  return out;
}

std::string json_text(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += {'\\', c};
    else if (c == '\n') out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) out += ' ';
    else out += c;
  }
  return out + "\"";
}

template <class A>
std::string per_sync_json(const A& a) {
  std::string s = "{";
  for (Sync m : kModes)
    s += std::string(s.size() > 1 ? "," : "") + "\"" + to_string(m) + "\":" +
         std::to_string(a[mode_index(m)]);
  return s + "}";
}

template <class A>
std::string per_sync_text(const A& a) {
  std::string s;
  for (Sync m : kModes)
    s += std::string(s.empty() ? "" : ", ") + to_string(m) + " " + std::to_string(a[mode_index(m)]);
  return s;
}

}  // namespace

Promise promise_of(const std::string& p) {
  if (has(p, "answered calls that changed the queue"))
    return has(p, "Sync::batch allows") ? Promise::batch_bound : Promise::lost;
  if (has(p, "a reopened store shows it absent") || has(p, "went down after a kill"))
    return Promise::lost;
  if (has(p, "although it was gone") || has(p, "had shown it gone") ||
      has(p, "although the reports have it gone"))
    return Promise::resurrected;
  if (has(p, "before its due time")) return Promise::early;
  if (has(p, "a reopened store shows") || has(p, "not the queue as it was") ||
      has(p, "the store holds") || has(p, "the totals of stats()") || has(p, "delivered ") ||
      has(p, "in a reopened store") || has(p, "drain:") || has(p, "after a reopen") ||
      has(p, "list_jobs("))
    return Promise::wrong;
  return Promise::other;
}

int print_report(const Options& o, const RunResult& r) {
  std::array<uint64_t, kPromises> broken{};
  std::vector<std::string> first;
  for (const ModeRun* mr : {&r.kill, &r.power})
    for (const std::string& p : mr->m.problems) {
      ++broken[static_cast<size_t>(promise_of(p))];
      if (first.size() < 3) first.push_back(p);
    }
  const ModeRun& failed = r.kill.m.problems.empty() ? r.power : r.kill;
  const bool ok = first.empty();
  const std::string replay =
      "delayq-crashtest " +
      replay_flags(o, &failed == &r.kill ? Modes::kill : Modes::power, o.cycles > 0 ? o.cycles : failed.cycles);
  const PowerTally& pt = r.power.power;
  const KillTally& kt = r.kill.kill;
  const size_t bi = mode_index(Sync::batch);
  const bool batch_tested = r.power.asked && pt.cycles[bi] > 0;
  const auto calls = calls_of(r);
  if (o.json) {
    std::string s = "{\"dir\":" + json_text(o.dir) + ",\"seed\":" + std::to_string(o.seed) +
                    ",\"sync\":" + json_text(sync_text(o.sync)) + ",\"horizon\":" +
                    json_text(tier_text(o)) + ",\"mode\":\"" + modes_text(o.modes) +
                    "\",\"threads\":" + std::to_string(o.threads);
    if (r.kill.asked)
      s += ",\"kill\":{\"cycles\":" + std::to_string(r.kill.cycles) +
           ",\"per_sync\":" + per_sync_json(kt.per_mode) + ",\"disk_tier_cycles\":" +
           std::to_string(kt.tiered) + ",\"seconds\":" + std::to_string(r.kill.secs) +
           ",\"killed_before_open\":" + std::to_string(kt.killed_before_open) +
           ",\"mid_write\":" + std::to_string(kt.mid_write) + ",\"mid_flush_or_compaction\":" +
           std::to_string(kt.mid_background) + ",\"mid_refill\":" + std::to_string(kt.mid_refill) +
           ",\"drain_delivered\":" + std::to_string(r.kill.drained) + "}";
    if (r.power.asked)
      s += ",\"power\":{\"cycles\":" + std::to_string(r.power.cycles) +
           ",\"per_sync\":" + per_sync_json(pt.cycles) + ",\"disk_tier_cycles\":" +
           std::to_string(pt.tiered) + ",\"seconds\":" + std::to_string(r.power.secs) +
           ",\"killed_before_open\":" + std::to_string(pt.killed_before_open) +
           ",\"mid_flush_or_compaction\":" + std::to_string(pt.mid_background) +
           ",\"mid_refill\":" + std::to_string(pt.mid_refill) + ",\"answered_lost\":" +
           per_sync_json(pt.lost) + ",\"most_lost_at_once\":" + per_sync_json(pt.max_lost) +
           ",\"bytes_dropped\":" + std::to_string(pt.fs.bytes_dropped) +
           ",\"drain_delivered\":" + std::to_string(r.power.drained) + "}";
    s += ",\"calls\":{";
    for (size_t i = 0; i < calls.size(); ++i)
      s += std::string(i ? "," : "") + "\"" + calls[i].first + "\":" + std::to_string(calls[i].second);
    s += "},\"calls_by_thread\":{";
    const auto by_thread = calls_by_thread(r, o.threads);
    for (size_t i = 0; i < by_thread.size(); ++i)
      s += std::string(i ? "," : "") + json_text(by_thread[i].first) + ":" +
           std::to_string(by_thread[i].second);
    s += "},\"promises\":{";
    for (size_t i = 0; i < kPromises; ++i) {
      const bool untested = static_cast<Promise>(i) == Promise::batch_bound && !batch_tested;
      s += std::string(i ? "," : "") + "\"" + kInfo[i].key + "\":{\"held\":" +
           (broken[i] == 0 ? "true" : "false") + ",\"broken\":" + std::to_string(broken[i]) +
           ",\"tested\":" + (untested ? "false" : "true") + "}";
    }
    s += "},\"ok\":" + std::string(ok ? "true" : "false");
    if (!r.planted.empty()) s += ",\"planted\":" + json_text(r.planted);
    if (!ok) {
      s += ",\"violations\":[";
      for (size_t i = 0; i < first.size(); ++i) s += (i ? "," : "") + json_text(first[i]);
      s += "],\"replay\":" + json_text(replay);
    }
    std::printf("%s}\n", s.c_str());
    return ok ? 0 : 1;
  }
  const auto tiny = std::chrono::duration_cast<std::chrono::milliseconds>(kTinyHorizon).count();
  const std::string tier =
      o.tier == Tier::off     ? "off"
      : o.tier == Tier::mixed ? "in half the cycles (horizon " + std::to_string(tiny) + " ms)"
                              : "on (horizon " + tier_text(o) + " ms)";
  std::printf("delayq-crashtest on %s: sync %s, disk tier %s, mode %s, %zu worker thread%s, "
              "seed %llu\n",
              o.dir.c_str(), sync_text(o.sync).c_str(), tier.c_str(), modes_text(o.modes),
              o.threads, o.threads == 1 ? "" : "s", (unsigned long long)o.seed);
  if (r.kill.asked)
    std::printf(
        "kill cycles: %d in %.1f s (%s; %d with the disk tier)\n"
        "  kills: %d with a call that writes in flight, %d during a RocksDB flush or compaction, "
        "%d during a disk-tier refill, %d before the store was open\n",
        r.kill.cycles, r.kill.secs, per_sync_text(kt.per_mode).c_str(), kt.tiered, kt.mid_write,
        kt.mid_background, kt.mid_refill, kt.killed_before_open);
  if (r.power.asked)
    std::printf(
        "power-loss cycles: %d in %.1f s (%s; %d with the disk tier)\n"
        "  power losses: %d during a RocksDB flush or compaction, %d during a disk-tier refill, "
        "%d before the store was open; %llu unsynced bytes dropped\n"
        "  answered calls lost (as each mode allows): %s; the most at once: %s\n",
        r.power.cycles, r.power.secs, per_sync_text(pt.cycles).c_str(), pt.tiered,
        pt.mid_background, pt.mid_refill, pt.killed_before_open,
        (unsigned long long)pt.fs.bytes_dropped, per_sync_text(pt.lost).c_str(),
        per_sync_text(pt.max_lost).c_str());
  std::printf("calls made:");
  for (size_t i = 0; i < calls.size(); ++i)
    std::printf("%s %s %llu", i ? "," : "", calls[i].first, (unsigned long long)calls[i].second);
  std::printf("\ncalls by thread:");
  const auto by_thread = calls_by_thread(r, o.threads);
  for (size_t i = 0; i < by_thread.size(); ++i)
    std::printf("%s %s %llu", i ? "," : "", by_thread[i].first.c_str(),
                (unsigned long long)by_thread[i].second);
  std::printf("\npromises:\n");
  for (size_t i = 0; i < kPromises; ++i) {
    const bool untested = static_cast<Promise>(i) == Promise::batch_bound && !batch_tested;
    std::printf("  %-8s %s\n",
                untested      ? "untested"
                : broken[i]   ? "BROKEN"
                              : "held",
                kInfo[i].text);
  }
  if (!r.planted.empty()) std::printf("planted fault: %s\n", r.planted.c_str());
  for (const ModeRun* mr : {&r.kill, &r.power})
    if (mr->asked && mr->m.problems.empty())
      std::printf("%s: the final drain settled the %zu jobs still owed (%llu delivered and "
                  "acked, the others dead after their last attempt)\n",
                  mr == &r.kill ? "kill cycles" : "power-loss cycles", mr->owed,
                  (unsigned long long)mr->drained);
  if (ok) {
    std::printf("verdict: every promise held\n");
    return 0;
  }
  std::printf("verdict: a promise broke; the first violations:\n");
  for (const std::string& p : first) std::printf("- %s\n", p.c_str());
  std::printf("replay: %s\n", replay.c_str());
  return 1;
}

}  // namespace delayq::crashtest
