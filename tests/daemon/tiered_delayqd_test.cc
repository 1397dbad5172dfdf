// delayqd's --horizon flag (docs/operations.md): it reaches the store's disk tier, the store
// keeps it for later starts without the flag, "off" keeps every job in memory, and bad values
// are refused before anything is opened. And --memtable-mb, the store's other memory flag.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "cli_harness.h"
#include "delayq/store.h"
#include "engine/test_hooks.h"

namespace delayq::testing {
namespace {

// Starts delayqd with `args`, then stops it with SIGTERM (a clean shutdown).
void run_and_stop(const std::vector<std::string>& args, const std::filesystem::path& log) {
  DaemonProcess d(DELAYQD_PATH, log);
  ASSERT_GT(d.start(args), 0) << d.log();
  d.signal(SIGTERM);
  ASSERT_TRUE(d.wait(std::chrono::seconds(60))) << d.log();
  EXPECT_EQ(d.exit_code(), 0) << d.log();
}

// The horizon a store opened without one has now: where its disk tier starts (none: no tier).
std::optional<engine::FarKey> horizon_of(const std::string& dir) {
  auto q = open_store({.dir = dir});
  EXPECT_TRUE(q.ok()) << q.status().to_string();
  return q.ok() ? engine::tier_view(**q).horizon : std::nullopt;
}

TEST(DelayqdHorizon, TheFlagReachesTheStoreWhichKeepsIt) {
  TempDir dir;
  const std::string store = dir.sub("s");
  run_and_stop({"--listen", "127.0.0.1:0", "--store", store, "--horizon", "60"}, dir.sub("log"));
  const TimePoint now = SystemClock::instance().now();
  const std::optional<engine::FarKey> h = horizon_of(store);
  ASSERT_TRUE(h.has_value()) << "no disk tier";
  EXPECT_GT(h->due, now + std::chrono::seconds(50));
  EXPECT_LE(h->due, now + std::chrono::seconds(70));
  // No flag: the store's own.
  run_and_stop({"--listen", "127.0.0.1:0", "--store", store}, dir.sub("log"));
  ASSERT_TRUE(horizon_of(store).has_value());
  EXPECT_LE(horizon_of(store)->due, SystemClock::instance().now() + std::chrono::seconds(70));
}

TEST(DelayqdHorizon, OffKeepsEveryJobInMemory) {
  TempDir dir;
  const std::string store = dir.sub("s");
  run_and_stop({"--listen", "127.0.0.1:0", "--store", store, "--horizon", "off"}, dir.sub("log"));
  EXPECT_FALSE(horizon_of(store).has_value());
}

TEST(DelayqdHorizon, BadValuesAreRefused) {
  TempDir dir;
  const std::string store = dir.sub("s");
  for (const char* bad : {"0", "-5", "1.5", "soon", "3153600001"}) {
    CliRun r = run_program(DELAYQD_PATH, {"--store", store, "--horizon", bad});
    EXPECT_EQ(r.exit, 2) << bad << ": " << describe(r);
    EXPECT_TRUE(contains(r.err, "--horizon")) << r.err;
  }
  CliRun r = run_program(DELAYQD_PATH, {"--redis", "redis://127.0.0.1:1", "--horizon", "60"});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "--horizon applies to --store")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(store)) << "a refused start created the store";
}

// --memtable-mb reaches RocksDB (the OPTIONS file it writes at open), in MiB; out of range or
// with --redis it is refused before anything is opened.
TEST(DelayqdMemtable, TheFlagReachesRocksDbAndBadValuesAreRefused) {
  TempDir dir;
  const std::string store = dir.sub("s");
  run_and_stop({"--listen", "127.0.0.1:0", "--store", store, "--memtable-mb", "4"},
               dir.sub("log"));
  std::string newest;
  for (const auto& e : std::filesystem::directory_iterator(store))
    if (e.path().filename().string().starts_with("OPTIONS-") && e.path().string() > newest)
      newest = e.path().string();
  std::ifstream in(newest);
  const std::string text(std::istreambuf_iterator<char>(in), {});
  EXPECT_NE(text.find("db_write_buffer_size=4194304"), std::string::npos) << newest;
  const std::string other = dir.sub("t");
  for (const char* bad : {"0", "1025", "-1", "16M", "99999999999999999999"}) {
    CliRun r = run_program(DELAYQD_PATH, {"--store", other, "--memtable-mb", bad});
    EXPECT_EQ(r.exit, 2) << bad << ": " << describe(r);
    EXPECT_TRUE(contains(r.err, "--memtable-mb must be a whole number of MiB from 1 to 1024"))
        << r.err;
  }
  CliRun r = run_program(DELAYQD_PATH, {"--redis", "redis://127.0.0.1:1", "--memtable-mb", "8"});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "--memtable-mb applies to --store")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(other)) << "a refused start created the store";
}

}  // namespace
}  // namespace delayq::testing
