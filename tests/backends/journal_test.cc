// The journal against a real RocksDB, one fresh directory per test.
//
// Kept whole over ~400 lines: every test uses the JournalTest fixture (a fresh directory and
// journal); the codec and the far records already have their own files (journal_codec_test.cc,
// journal_far_test.cc).
#include "wal/journal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include "journal_records.h"
#include "raw_rocksdb.h"
#include "wal/codec.h"
#include "wal/journal_tier.h"

namespace delayq::wal {
namespace {

using engine::Change;
using engine::JobRecord;
using test_records::full;
using test_records::make;

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/delayq_journal_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::unique_ptr<Journal> open(JournalOptions o = fast()) {
    auto j = Journal::open(dir_, o);
    EXPECT_TRUE(j.ok()) << j.status().to_string();
    return j.ok() ? std::move(j).value() : nullptr;
  }

  static JournalOptions fast() {
    JournalOptions o;
    o.sync.mode = Sync::none;
    return o;
  }

  // fast(), tolerant, each report added to `skipped`.
  static JournalOptions tolerant(std::vector<std::string>& skipped) {
    JournalOptions o = fast();
    o.tolerant = true;
    o.on_skip = [&skipped](const std::string& m) { skipped.push_back(m); };
    return o;
  }

  // Writes (or, with value == nullptr, reads into *got) straight in the store with RocksDB,
  // bypassing the journal.
  void raw_put(const std::string& family, const std::string& key, const std::string& value) {
    raw(family, key, &value, nullptr);
  }
  std::string raw_get(const std::string& family, const std::string& key) {
    std::string got;
    raw(family, key, nullptr, &got);
    return got;
  }
  void raw(const std::string& family, const std::string& key, const std::string* value,
           std::string* got) {
    testing::raw_access(dir_, family, key, value, got);
  }

  std::string dir_;
};

std::string key_of(uint64_t seq) {
  std::string k(8, '\0');
  for (int i = 0; i < 8; ++i) k[i] = static_cast<char>(seq >> (8 * (7 - i)));
  return k;
}

std::vector<JobRecord> scan_all(Journal& j) {
  std::vector<JobRecord> out;
  Status s = j.scan([&](JobRecord&& r) {
    out.push_back(std::move(r));
    return Status();
  });
  EXPECT_TRUE(s.ok()) << s.to_string();
  return out;
}

std::vector<Change> puts(const std::vector<JobRecord>& rs) {
  std::vector<Change> cs;
  for (const JobRecord& r : rs) cs.push_back({r.seq, r});
  return cs;
}

Change erase(uint64_t seq) { return {seq, std::nullopt}; }

// ---- the store --------------------------------------------------------------------------------

TEST_F(JournalTest, WriteThenScanInSeqOrder) {
  JournalOptions o;  // Sync::always
  auto j = open(o);
  ASSERT_TRUE(j);
  // Written out of order, across the byte boundaries of the big-endian key.
  std::vector<JobRecord> rs = {make(300), make(1), make(256), make(255), make(2),
                               full(uint64_t{1} << 40, RetryPolicy::Kind::list), make(0)};
  ASSERT_TRUE(j->write(puts(rs)).ok());
  const auto got = scan_all(*j);
  ASSERT_EQ(got.size(), rs.size());
  std::vector<uint64_t> seqs;
  for (const auto& r : got) seqs.push_back(r.seq);
  EXPECT_EQ(seqs, (std::vector<uint64_t>{0, 1, 2, 255, 256, 300, uint64_t{1} << 40}));
  EXPECT_EQ(got.back(), full(uint64_t{1} << 40, RetryPolicy::Kind::list));
}

TEST_F(JournalTest, EmptyWriteIsANoOp) {
  auto j = open();
  ASSERT_TRUE(j);
  EXPECT_TRUE(j->write({}).ok());
  EXPECT_TRUE(scan_all(*j).empty());
}

TEST_F(JournalTest, DeletesRemoveAndOverwritesReplace) {
  auto j = open();
  ASSERT_TRUE(j);
  ASSERT_TRUE(j->write(puts({make(1), make(2), make(3)})).ok());
  ASSERT_TRUE(j->write({erase(2)}).ok());
  ASSERT_TRUE(j->write({erase(99)}).ok());  // deleting what is not there is fine
  JobRecord r3 = make(3, "new body");
  r3.attempts = 2;
  ASSERT_TRUE(j->write({{3, r3}}).ok());
  const auto got = scan_all(*j);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], make(1));
  EXPECT_EQ(got[1], r3);
}

TEST_F(JournalTest, MixedBatchAppliesInOrder) {
  auto j = open();
  ASSERT_TRUE(j);
  ASSERT_TRUE(j->write(puts({make(1), make(2), make(3)})).ok());
  JobRecord r4b = make(4, "second");
  std::vector<Change> batch = {erase(1), {4, make(4)}, erase(3), {5, make(5)}, {4, r4b}, erase(5)};
  ASSERT_TRUE(j->write(batch).ok());
  const auto got = scan_all(*j);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], make(2));
  EXPECT_EQ(got[1], r4b);  // the later put of the same seq wins
}

TEST_F(JournalTest, MismatchedSeqIsRefusedWholesale) {
  auto j = open();
  ASSERT_TRUE(j);
  Status s = j->write({{1, make(1)}, {2, make(3)}});
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(scan_all(*j).empty());
}

TEST_F(JournalTest, ReopenReturnsTheSameRecords) {
  std::vector<JobRecord> rs;
  for (uint64_t i = 1; i <= 50; ++i) rs.push_back(make(i, std::string(i, 'x')));
  rs.push_back(full(51, RetryPolicy::Kind::exponential));
  rs.push_back(full(52, RetryPolicy::Kind::fixed));
  {
    auto j = open();
    ASSERT_TRUE(j);
    ASSERT_TRUE(j->write(puts(rs)).ok());
    ASSERT_TRUE(j->write({erase(10), erase(20)}).ok());
  }
  std::erase_if(rs, [](const JobRecord& r) { return r.seq == 10 || r.seq == 20; });
  for (int round = 0; round < 2; ++round) {
    auto j = open();
    ASSERT_TRUE(j);
    EXPECT_EQ(scan_all(*j), rs);
  }
}

TEST_F(JournalTest, LargeBodySurvivesReopen) {
  std::string big(1 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31 + 7);
  const JobRecord r = make(8, big);
  {
    auto j = open(JournalOptions{});
    ASSERT_TRUE(j);
    ASSERT_TRUE(j->write({{8, r}}).ok());
  }
  auto j = open();
  ASSERT_TRUE(j);
  const auto got = scan_all(*j);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], r);
}

TEST_F(JournalTest, SecondOpenInThisProcessIsUnavailable) {
  auto j = open();
  ASSERT_TRUE(j);
  auto k = Journal::open(dir_, fast());
  ASSERT_FALSE(k.ok());
  EXPECT_TRUE(k.is(Errc::unavailable)) << k.status().to_string();
  EXPECT_NE(k.status().message().find("in use"), std::string::npos) << k.status().message();
  EXPECT_NE(k.status().message().find(dir_), std::string::npos) << k.status().message();
  // Refused by the store's own lock (wal/lock.h), before RocksDB is asked.
  EXPECT_NE(k.status().message().find("this process already has it open"), std::string::npos)
      << k.status().message();
  j.reset();
  EXPECT_TRUE(Journal::open(dir_, fast()).ok());  // free again once the first is gone
}

TEST_F(JournalTest, OpenWhileAnotherProcessHoldsTheLockIsUnavailable) {
  { ASSERT_TRUE(open()); }  // create the store (and its LOCK file)
  int ready[2], done[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(done), 0);
  const std::string lock_path = dir_ + "/LOCK";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: take the same fcntl lock RocksDB takes, say so, wait until told to stop. Only
    // async-signal-safe calls here.
    close(ready[0]);
    close(done[1]);
    const int fd = ::open(lock_path.c_str(), O_RDWR);
    struct flock f = {};
    f.l_type = F_WRLCK;
    f.l_whence = SEEK_SET;
    char ok = (fd >= 0 && fcntl(fd, F_SETLK, &f) == 0) ? '1' : '0';
    (void)!::write(ready[1], &ok, 1);
    char c;
    (void)!::read(done[0], &c, 1);
    _exit(0);
  }
  close(ready[1]);
  close(done[0]);
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ASSERT_EQ(ok, '1');
  auto k = Journal::open(dir_, fast());
  // The holder is named (its pid, and its program from /proc: a fork of this test).
  const std::string holder = "locked by process " + std::to_string(pid) + " (";
  close(done[1]);
  close(ready[0]);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  ASSERT_FALSE(k.ok());
  EXPECT_TRUE(k.is(Errc::unavailable)) << k.status().to_string();
  EXPECT_NE(k.status().message().find("in use by another process"), std::string::npos)
      << k.status().message();
  EXPECT_NE(k.status().message().find(holder), std::string::npos) << k.status().message();
}

TEST_F(JournalTest, NewerFormatIsRefused) {
  { ASSERT_TRUE(open()); }
  raw_put("meta", "format", std::to_string(kFormatVersion + 1));
  auto j = Journal::open(dir_, fast());
  ASSERT_FALSE(j.ok());
  EXPECT_TRUE(j.is(Errc::corrupt)) << j.status().to_string();
  const std::string m = j.status().message();
  const std::string newer = "format version " + std::to_string(kFormatVersion + 1);
  const std::string ours = "format version " + std::to_string(kFormatVersion) + ")";
  EXPECT_NE(m.find(newer), std::string::npos) << m;
  EXPECT_NE(m.find(ours), std::string::npos) << m;
  EXPECT_NE(m.find(dir_), std::string::npos) << m;
  // Read-only refuses it as well.
  JournalOptions ro = fast();
  ro.read_only = true;
  EXPECT_TRUE(Journal::open(dir_, ro).is(Errc::corrupt));
}

TEST_F(JournalTest, NewerFormatWithFamiliesWeDoNotKnowIsRefusedByVersion) {
  {
    rocksdb::DBOptions o;
    o.create_if_missing = true;
    o.create_missing_column_families = true;
    std::vector<rocksdb::ColumnFamilyDescriptor> fams = {
        {rocksdb::kDefaultColumnFamilyName, {}}, {"jobs", {}}, {"meta", {}}, {"ids", {}}};
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir_, fams, &handles, &db).ok());
    rocksdb::Status s = db->Put(rocksdb::WriteOptions(), handles[2], "format", "7");
    for (auto* h : handles) (void)db->DestroyColumnFamilyHandle(h);
    delete db;
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  auto j = Journal::open(dir_, fast());
  ASSERT_FALSE(j.ok());
  EXPECT_TRUE(j.is(Errc::corrupt)) << j.status().to_string();
  EXPECT_NE(j.status().message().find("format version 7"), std::string::npos)
      << j.status().message();
}

TEST_F(JournalTest, UnreadableFormatIsCorrupt) {
  raw_put("meta", "format", "one");
  auto j = Journal::open(dir_, fast());
  EXPECT_TRUE(j.is(Errc::corrupt)) << j.status().to_string();
}

// Without the disk tier a store is format 1, as older builds wrote and read it; with it, format
// 4 (the tier and its per-topic index, wal/far_index.h), and a format-1 store is raised to it
// when it gets the tier. A store without the tier is not raised further at open: format 3 comes
// only with a record that needs it (store_format_test.cc).
TEST_F(JournalTest, TheFormatIs1WithoutTheDiskTierAnd4WithIt) {
  { ASSERT_TRUE(open()); }
  EXPECT_EQ(raw_get("meta", "format"), "1");
  EXPECT_TRUE(open());
  JournalOptions tiered = fast();
  tiered.tiered = true;
  {
    auto j = open(tiered);
    ASSERT_TRUE(j);
    EXPECT_TRUE(JournalTier(*j).present());
  }
  EXPECT_EQ(raw_get("meta", "format"), "4");
  EXPECT_EQ(kFarIndexFormat, 4u);
  // Opened again without asking for it, the store keeps its disk tier and its format.
  {
    auto j = open();
    ASSERT_TRUE(j);
    EXPECT_TRUE(JournalTier(*j).present());
  }
  EXPECT_EQ(raw_get("meta", "format"), "4");
}

TEST_F(JournalTest, TotalsAddUpAcrossAppendsAndSurviveAReopen) {
  {
    auto j = open();
    ASSERT_TRUE(j);
    EXPECT_EQ(j->totals()->pushed, 0u);
    ASSERT_TRUE(j->append(puts({make(1)}), Stats{.pushed = 1}).ok());
    Result<uint64_t> t = j->append(puts({make(2)}), Stats{.pushed = 1, .delivered = 2, .purged = 9});
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE(j->sync_to(*t).ok());
  }
  auto j = open();
  ASSERT_TRUE(j);
  Result<Stats> got = j->totals();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(got->pushed, 2u);
  EXPECT_EQ(got->delivered, 2u);
  EXPECT_EQ(got->purged, 9u);
  EXPECT_EQ(got->acked, 0u);
  // Appends after a reopen add to what was stored.
  ASSERT_TRUE(j->write(puts({make(3)})).ok());
  ASSERT_TRUE(j->sync_to(*j->append(puts({make(4)}), Stats{.pushed = 1})).ok());
  j.reset();
  EXPECT_EQ(open()->totals()->pushed, 3u);
}

TEST_F(JournalTest, AppendsNeverWaitedForAreWrittenAtCloseWithTheirTotals) {
  {
    auto j = open();
    ASSERT_TRUE(j);
    ASSERT_TRUE(j->append(puts({make(1)}), Stats{.pushed = 1}).ok());
    ASSERT_TRUE(j->append(puts({make(2)}), Stats{.pushed = 1}).ok());
  }
  auto j = open();
  ASSERT_TRUE(j);
  EXPECT_EQ(scan_all(*j).size(), 2u);
  EXPECT_EQ(j->totals()->pushed, 2u);
}

TEST_F(JournalTest, UnreadableTotalsAreCorruptUnlessTolerant) {
  EXPECT_EQ(decode_totals(encode_totals(Stats{.acked = 7}))->acked, 7u);
  EXPECT_TRUE(decode_totals("").is(Errc::corrupt));
  EXPECT_TRUE(decode_totals(encode_totals(Stats{}) + "x").is(Errc::corrupt));
  std::string newer = encode_totals(Stats{});
  newer[0] = 3;
  EXPECT_NE(decode_totals(newer).status().message().find("version 3"), std::string::npos);
  // Version 1 (nine counters, before `released`) is still read.
  std::string v1 = encode_totals(Stats{.acked = 7, .purged = 5});
  v1[0] = 1;
  v1.resize(v1.size() - 8);
  Result<Stats> old = decode_totals(v1);
  ASSERT_TRUE(old.ok()) << old.status().to_string();
  EXPECT_EQ(old->acked, 7u);
  EXPECT_EQ(old->purged, 5u);
  EXPECT_EQ(old->released, 0u);
  EXPECT_TRUE(decode_totals(v1 + std::string(8, '\0')).is(Errc::corrupt));

  { ASSERT_TRUE(open()); }
  raw_put("meta", "totals", "garbage");
  {
    auto j = open();
    ASSERT_TRUE(j);
    Result<Stats> t = j->totals();
    EXPECT_TRUE(t.is(Errc::corrupt)) << t.status().to_string();
    EXPECT_NE(t.status().message().find("totals"), std::string::npos);
  }
  std::vector<std::string> skipped;
  auto j = open(tolerant(skipped));
  ASSERT_TRUE(j);
  EXPECT_EQ(j->totals()->pushed, 0u);
  EXPECT_EQ(skipped.size(), 1u);
}

// The paused topics (wal/paused.h): a pause and a resume in order with the other appends, one
// key per paused topic as docs/journal-format.md shows it, read back at open; a damaged value
// refuses the store, naming the topic, unless tolerant (then the topic runs).
TEST_F(JournalTest, PausedTopicsAreWrittenInOrderAndADamagedOneIsCorruptUnlessTolerant) {
  {
    auto j = open();
    ASSERT_TRUE(j);
    for (auto [topic, paused] : {std::pair{"a", true},
                                 {"b", true},
                                 {"a", false},
                                 {"c", true},
                                 {"c", false},
                                 {"c", true}}) {
      Result<uint64_t> t = j->append_paused(topic, paused);
      ASSERT_TRUE(t.ok()) << t.status().to_string();
      ASSERT_TRUE(j->sync_to(*t).ok());
    }
    EXPECT_EQ(*j->paused_topics(), (std::vector<std::string>{"b", "c"}));
  }
  EXPECT_EQ(raw_get("meta", "paused/b"), "\x01");
  {
    auto j = open();
    ASSERT_TRUE(j);
    EXPECT_EQ(*j->paused_topics(), (std::vector<std::string>{"b", "c"}));
  }
  raw_put("meta", "paused/b", "\x02");
  {
    auto j = open();
    ASSERT_TRUE(j);
    Result<std::vector<std::string>> p = j->paused_topics();
    EXPECT_TRUE(p.is(Errc::corrupt)) << p.status().to_string();
    EXPECT_NE(p.status().message().find("topic 'b'"), std::string::npos) << p.status().to_string();
  }
  std::vector<std::string> skipped;
  auto j = open(tolerant(skipped));
  ASSERT_TRUE(j);
  EXPECT_EQ(*j->paused_topics(), (std::vector<std::string>{"c"}));
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("taken as running"), std::string::npos) << skipped[0];
}

// Fences and generated ids continue above the stored counters after a restart, wherever the
// wall clock stands (tests/backends/clock_step_process_test.cc), so the journal keeps the highest it was
// given, and an unreadable record of them is refused, not guessed.
TEST_F(JournalTest, CountersKeepTheHighestAndAreCorruptUnlessTolerant) {
  const engine::Counters c{.fences = 1u << 31, .next_id = UINT64_MAX - 7};
  EXPECT_EQ(*decode_counters(encode_counters(c)), c);
  const std::string bytes = encode_counters(c);
  for (const std::string& bad : {bytes.substr(0, 9), bytes + "x", "\x02" + bytes.substr(1)})
    EXPECT_TRUE(decode_counters(bad).is(Errc::corrupt)) << bad.size();
  {
    auto j = open();
    ASSERT_TRUE(j);
    EXPECT_EQ(*j->counters(), engine::Counters{});
    ASSERT_TRUE(j->append(puts({make(1)}), {}, {.fences = 9, .next_id = 3}).ok());
    ASSERT_TRUE(j->sync_to(*j->append(puts({make(2)}), {}, {.fences = 4, .next_id = 5})).ok());
  }
  EXPECT_EQ(*open()->counters(), (engine::Counters{.fences = 9, .next_id = 5}));
  raw_put("meta", "counters", "garbage");
  Result<engine::Counters> got = open()->counters();
  EXPECT_TRUE(got.is(Errc::corrupt)) << got.status().to_string();
  EXPECT_NE(got.status().message().find("counters in family 'meta'"), std::string::npos);
  std::vector<std::string> skipped;
  EXPECT_EQ(*open(tolerant(skipped))->counters(), engine::Counters{});
  EXPECT_EQ(skipped.size(), 1u);
}

TEST_F(JournalTest, GarbageRecordFailsScanUnlessTolerant) {
  {
    auto j = open();
    ASSERT_TRUE(j);
    ASSERT_TRUE(j->write(puts({make(4), make(6)})).ok());
  }
  raw_put("jobs", key_of(5), "this is not a record");
  {
    auto j = open();
    ASSERT_TRUE(j);
    std::vector<uint64_t> seen;
    Status s = j->scan([&](JobRecord&& r) {
      seen.push_back(r.seq);
      return Status();
    });
    EXPECT_TRUE(s.is(Errc::corrupt)) << s.to_string();
    EXPECT_NE(s.message().find("seq 5"), std::string::npos) << s.message();
    EXPECT_EQ(seen, std::vector<uint64_t>{4});
  }
  std::vector<std::string> skipped;
  JournalOptions t = tolerant(skipped);
  auto j = open(t);
  ASSERT_TRUE(j);
  const auto got = scan_all(*j);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], make(4));
  EXPECT_EQ(got[1], make(6));
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("seq 5"), std::string::npos) << skipped[0];

  // Tolerant without a callback just skips.
  j.reset();
  t.on_skip = nullptr;
  j = open(t);
  ASSERT_TRUE(j);
  EXPECT_EQ(scan_all(*j).size(), 2u);
}

TEST_F(JournalTest, BadKeyLengthIsCorrupt) {
  { ASSERT_TRUE(open()); }
  raw_put("jobs", "abc", encode_record(make(1)));
  auto j = open();
  ASSERT_TRUE(j);
  Status s = j->scan([](JobRecord&&) { return Status(); });
  EXPECT_TRUE(s.is(Errc::corrupt)) << s.to_string();
}

TEST_F(JournalTest, ScanStopsAtTheCallbacksError) {
  auto j = open();
  ASSERT_TRUE(j);
  ASSERT_TRUE(j->write(puts({make(1), make(2), make(3)})).ok());
  int calls = 0;
  Status s = j->scan([&](JobRecord&&) {
    return ++calls == 2 ? Status(Errc::invalid_argument, "stop") : Status();
  });
  EXPECT_TRUE(s.is(Errc::invalid_argument));
  EXPECT_EQ(calls, 2);
}

TEST_F(JournalTest, ReadOnlySeesDataAndRefusesWrites) {
  {
    auto j = open();
    ASSERT_TRUE(j);
    ASSERT_TRUE(j->write(puts({make(1), make(2)})).ok());
  }
  JournalOptions ro = fast();
  ro.read_only = true;
  auto a = open(ro);
  ASSERT_TRUE(a);
  auto b = open(ro);  // no lock: two readers at once
  ASSERT_TRUE(b);
  EXPECT_EQ(scan_all(*a), (std::vector<JobRecord>{make(1), make(2)}));
  EXPECT_EQ(scan_all(*b).size(), 2u);
  Status s = a->write({{3, make(3)}});
  EXPECT_TRUE(s.is(Errc::invalid_state)) << s.to_string();
  EXPECT_TRUE(a->write({}).is(Errc::invalid_state));
  EXPECT_EQ(scan_all(*a).size(), 2u);
}

TEST_F(JournalTest, ReadOnlyOfAMissingStoreFails) {
  JournalOptions ro = fast();
  ro.read_only = true;
  auto j = Journal::open(dir_ + "/nothing-here", ro);
  ASSERT_FALSE(j.ok());
  EXPECT_TRUE(j.is(Errc::io_error)) << j.status().to_string();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/nothing-here"));
}

TEST_F(JournalTest, TenThousandRecordsInOneBatch) {
  std::vector<JobRecord> rs;
  rs.reserve(10'000);
  for (uint64_t i = 0; i < 10'000; ++i)
    rs.push_back(make(1'000'000 + i, "payload " + std::to_string(i)));
  {
    auto j = open(JournalOptions{});
    ASSERT_TRUE(j);
    ASSERT_TRUE(j->write(puts(rs)).ok());
    EXPECT_EQ(scan_all(*j), rs);
  }
  auto j = open();
  ASSERT_TRUE(j);
  EXPECT_EQ(scan_all(*j), rs);
}

TEST_F(JournalTest, ConcurrentWritersAndScans) {
  auto j = open();
  ASSERT_TRUE(j);
  std::vector<std::thread> ts;
  for (uint64_t t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (uint64_t i = 0; i < 100; ++i) {
        const uint64_t seq = t * 1000 + i;
        EXPECT_TRUE(j->write({{seq, make(seq)}}).ok());
        if (i % 25 == 0) (void)scan_all(*j);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(scan_all(*j).size(), 400u);
}

}  // namespace
}  // namespace delayq::wal
