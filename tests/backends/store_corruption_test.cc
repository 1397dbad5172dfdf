// Damage on disk, on real RocksDB files: what opening a damaged store answers, and what the
// tolerant option recovers (docs/durability.md, "Damage on disk").
//
// A crash image is a copy of a store's directory taken while the store was open, after its
// calls returned: the files a kill -9 would leave, with RocksDB's write-ahead log not yet
// replayed into table files.
#include <gtest/gtest.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/table_properties.h>

#include <filesystem>

#include "delayq/store.h"
#include "store_files.h"
#include "wal/journal.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

std::string body_of(int i) {
  return "<<body of j" + std::to_string(i) + ">>" + std::string(64, 'x');
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class StoreDamage : public ::testing::Test {
 protected:
  Result<std::unique_ptr<Engine>> open(const std::string& dir, bool tolerant = false,
                                       bool read_only = false) {
    StoreOptions o;
    o.dir = dir;
    o.tolerant = tolerant;
    o.read_only = read_only;
    o.on_skip = [this](const std::string& why) { skipped.push_back(why); };
    return open_store(o);
  }

  // Pushes j0..j{n-1}, one call (so one log record) each, into a store at `dir`, and closes it
  // cleanly (its log moved into table files), unless `image` is given: then a copy of the
  // directory taken before the close goes there.
  void fill(const std::string& dir, int n, const std::string& image = "") {
    auto q = open(dir);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    for (int i = 0; i < n; ++i)
      ASSERT_TRUE(
          (*q)->push({.topic = "t", .id = "j" + std::to_string(i), .delay = 1h, .body = body_of(i)})
              .ok());
    if (!image.empty()) std::filesystem::copy(dir, image, std::filesystem::copy_options::recursive);
  }

  // The only log file of a crash image.
  static std::string the_log(const std::string& dir) {
    std::vector<std::string> logs = testing::files_ending(dir, ".log");
    EXPECT_EQ(logs.size(), 1u);
    return logs.empty() ? "" : logs[0];
  }

  // A crash image (in tmp/image) of j0..j19 whose log has a byte flipped inside the record of
  // j10; returns the log's path ("" on failure).
  std::string damaged_log_image() {
    fill(tmp.sub("live"), 20, tmp.sub("image"));
    const std::string log = the_log(tmp.sub("image"));
    const size_t at = testing::read_file(log).find(body_of(10));
    if (at == std::string::npos || !testing::flip_byte(log, at + 5)) return "";
    return log;
  }

  // Checks that j0..j{n-1} are there with their bodies and j{n}..j{total-1} are not, and that
  // the totals of stats() count exactly the pushes that are there.
  static void expect_jobs(Engine& q, int n, int total) {
    for (int i = 0; i < total; ++i) {
      Result<JobInfo> j = q.get("j" + std::to_string(i));
      if (i < n) {
        ASSERT_TRUE(j.ok()) << "j" << i << ": " << j.status().to_string();
        EXPECT_EQ(j->body, body_of(i));
      } else {
        EXPECT_TRUE(j.is(Errc::not_found)) << "j" << i << " is back";
      }
    }
    EXPECT_EQ(q.stats().pushed, static_cast<uint64_t>(n));
  }

  TempDir tmp;
  std::vector<std::string> skipped;
};

// A crash in the middle of a log write leaves its last record cut short: that is an ordinary
// crash, and the store opens with every call before it.
TEST_F(StoreDamage, ALogCutShortInItsLastRecordOpensWithEveryCallBeforeIt) {
  fill(tmp.sub("live"), 20, tmp.sub("image"));
  const std::string log = the_log(tmp.sub("image"));
  std::filesystem::resize_file(log, std::filesystem::file_size(log) - 10);
  auto q = open(tmp.sub("image"));
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  expect_jobs(**q, 19, 20);
  EXPECT_TRUE(skipped.empty());
}

// A flipped byte inside the log, with records after it: those records may be answered calls,
// so the open is refused, naming the log file and the damage. (RocksDB's default recovery mode
// opened such a store without the calls after the damage and said nothing.)
TEST_F(StoreDamage, ALogDamagedBeforeItsEndIsRefusedNamingTheFile) {
  const std::string log = damaged_log_image();
  ASSERT_FALSE(log.empty());
  for (bool read_only : {false, true}) {
    auto q = open(tmp.sub("image"), false, read_only);
    ASSERT_TRUE(q.is(Errc::corrupt)) << (q.ok() ? "opened" : q.status().to_string());
    const std::string m = q.status().message();
    EXPECT_TRUE(has(m, std::filesystem::path(log).filename().string())) << m;
    EXPECT_TRUE(has(m, "checksum mismatch")) << m;
    EXPECT_TRUE(has(m, "tolerant")) << "says what to do: " << m;
  }
  EXPECT_TRUE(skipped.empty());
}

// Tolerant: the store as it was after the last call before the damage, the loss reported once;
// the damaged log is retired, so the next strict open finds the same queue.
TEST_F(StoreDamage, TolerantOpensAtTheLastCallBeforeTheLogDamage) {
  const std::string log = damaged_log_image();
  ASSERT_FALSE(log.empty());
  {
    auto q = open(tmp.sub("image"), true);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    expect_jobs(**q, 10, 20);
    ASSERT_EQ(skipped.size(), 1u);
    EXPECT_TRUE(has(skipped[0], std::filesystem::path(log).filename().string())) << skipped[0];
    EXPECT_TRUE(has(skipped[0], "lost")) << skipped[0];
    ASSERT_TRUE((*q)->push({.topic = "t", .id = "after", .body = "a"}).ok());
  }
  skipped.clear();
  auto q = open(tmp.sub("image"));
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_TRUE((*q)->get("j9").ok());
  EXPECT_TRUE((*q)->get("j10").is(Errc::not_found));
  EXPECT_EQ((*q)->get("after")->body, "a");
  EXPECT_EQ((*q)->stats().pushed, 11u);
  EXPECT_TRUE(skipped.empty());
}

// The table file (.sst) of family 'jobs' in `dir`, and the size of its data blocks.
std::pair<std::string, uint64_t> jobs_table(const std::string& dir) {
  for (const std::string& path : testing::files_ending(dir, ".sst")) {
    rocksdb::SstFileReader reader{rocksdb::Options()};
    if (!reader.Open(path).ok()) continue;
    const auto props = reader.GetTableProperties();
    if (props && props->column_family_name == "jobs") return {path, props->data_size};
  }
  return {"", 0};
}

// A flipped byte in a data block of a table file: the block's checksum catches it, and the open
// is refused naming the file, with or without tolerant (a damaged block cannot be read around:
// the records in it are gone, and which ones is unknown).
TEST_F(StoreDamage, ATableFileWithADamagedDataBlockIsRefusedNamingTheFile) {
  fill(tmp.path(), 20);
  const auto [sst, data_size] = jobs_table(tmp.path());
  ASSERT_FALSE(sst.empty()) << "a clean close writes the jobs to a table file";
  ASSERT_GT(data_size, 0u);
  ASSERT_TRUE(testing::flip_byte(sst, data_size / 2));
  for (bool tolerant : {false, true}) {
    auto q = open(tmp.path(), tolerant);
    ASSERT_TRUE(q.is(Errc::corrupt)) << (q.ok() ? "opened" : q.status().to_string());
    const std::string m = q.status().message();
    EXPECT_TRUE(has(m, std::filesystem::path(sst).filename().string())) << m;
    EXPECT_TRUE(has(m, "checksum mismatch")) << m;
    EXPECT_TRUE(has(m, "offset")) << m;
    EXPECT_TRUE(has(m, "backup")) << "says what to do: " << m;
  }
}

// Records that decode but that no call could have written (Core::restore refuses them): corrupt,
// naming the record; tolerant skips each one, reports it, and keeps everything else.
TEST_F(StoreDamage, RecordsNoCallCouldWriteAreCorruptOrSkippedWhenTolerant) {
  fill(tmp.path(), 5);
  {
    auto journal = wal::Journal::open(tmp.path(), {});
    ASSERT_TRUE(journal.ok()) << journal.status().to_string();
    ASSERT_TRUE((*journal)->totals().ok());  // so that the write keeps them
    auto bad = [](uint64_t seq, std::string id) {
      return engine::JobRecord{.seq = seq,
                               .id = std::move(id),
                               .topic = "t",
                               .body = "bad",
                               .due = SystemClock::instance().now(),
                               .ttr = 30s};
    };
    std::vector<engine::Change> changes;
    changes.push_back({100, bad(100, "no-topic")});
    changes[0].record->topic.clear();
    changes.push_back({101, bad(101, "j1")});  // j1 is there already
    changes.push_back({102, bad(102, "far")});
    changes[2].record->due += std::chrono::hours(24 * 365 * 150);
    ASSERT_TRUE((*journal)->write(changes).ok());
  }
  auto strict = open(tmp.path());
  ASSERT_TRUE(strict.is(Errc::corrupt)) << (strict.ok() ? "opened" : strict.status().to_string());
  EXPECT_TRUE(has(strict.status().message(), "store " + tmp.path() + ": record seq 100"))
      << strict.status().message();
  EXPECT_TRUE(has(strict.status().message(), "topic of 0 bytes")) << strict.status().message();

  auto q = open(tmp.path(), true);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  expect_jobs(**q, 5, 5);
  EXPECT_TRUE((*q)->get("no-topic").is(Errc::not_found));
  EXPECT_TRUE((*q)->get("far").is(Errc::not_found));
  ASSERT_EQ(skipped.size(), 3u);
  for (const char* part : {"record seq 100", "record seq 101", "record seq 102"})
    EXPECT_TRUE(std::any_of(skipped.begin(), skipped.end(),
                            [&](const std::string& s) { return has(s, part); }))
        << part << " is reported";
  EXPECT_TRUE(has(skipped[1] + skipped[0] + skipped[2], "restored already"));
  EXPECT_TRUE(has(skipped[1] + skipped[0] + skipped[2], "out of range"));
  q->reset();

  // Without on_skip, each skipped record is reported on stderr.
  StoreOptions o;
  o.dir = tmp.path();
  o.tolerant = true;
  ::testing::internal::CaptureStderr();
  auto quiet = open_store(o);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(quiet.ok()) << quiet.status().to_string();
  EXPECT_TRUE(has(err, "delayq: skipped: store " + tmp.path() + ": record seq 101")) << err;
}

}  // namespace
}  // namespace delayq
