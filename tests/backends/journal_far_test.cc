// The disk tier's part of the journal (docs/tiered-store.md): its byte layout (wal/far_codec.h)
// and its writes and reads against a real RocksDB (wal/far_reads.h through Journal).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "journal_records.h"
#include "temp_dir.h"
#include "wal/codec.h"
#include "wal/far_codec.h"
#include "wal/journal.h"
#include "wal/journal_tier.h"

namespace delayq::wal {
namespace {

using engine::FarBatch;
using engine::FarChange;
using engine::FarKey;
using engine::JobRecord;
using test_records::make;

FarKey key(int64_t due_ns, uint64_t seq) {
  return FarKey{TimePoint(Duration(due_ns)), seq};
}

TEST(FarEncoding, KeysSortByDueThenSeqAndRoundTrip) {
  const std::vector<FarKey> keys = {key(0, 0),
                                    key(0, 1),
                                    key(1, 0),
                                    key(255, 7),
                                    key(256, 0),
                                    key(1'700'000'000'000'000'000, UINT64_MAX),
                                    key(INT64_MAX, UINT64_MAX)};
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(decode_far_key(far_key(keys[i])), keys[i]);
    if (i > 0) {
      EXPECT_LT(far_key(keys[i - 1]), far_key(keys[i])) << i;
    }
  }
  EXPECT_EQ(hex(far_key(key(258, 7))),
            "0000000000000102"
            "0000000000000007");
  EXPECT_FALSE(decode_far_key(std::string(15, '\0')));
  EXPECT_FALSE(decode_far_key(std::string(17, '\0')));
}

// The example of docs/journal-format.md ("Family far-topic"); one topic's keys never run into
// another's, even one it is a prefix of.
TEST(FarEncoding, TopicIndexKeysMatchTheFormatAndKeepTopicsApart) {
  EXPECT_EQ(hex(far_topic_key("orders", key(1'704'067'200'000'000'000, 258))),
            "00000006"
            "6f7264657273"
            "17a6101701650000"
            "0000000000000102");
  const FarKey k = key(12345, 6);
  EXPECT_EQ(decode_far_topic_key(far_topic_key("a/b", k)), k);
  EXPECT_EQ(far_topic_key("a/b", k).substr(0, far_topic_prefix("a/b").size()),
            far_topic_prefix("a/b"));
  EXPECT_LT(far_topic_key("a", key(INT64_MAX, UINT64_MAX)), far_topic_key("ab", key(0, 0)));
  EXPECT_LT(far_topic_key("a", key(5, 0)), far_topic_key("a", key(5, 1)));
  EXPECT_FALSE(decode_far_topic_key(far_topic_key("a", k) + "x"));
  EXPECT_FALSE(decode_far_topic_key(far_topic_key("a", k).substr(1)));
  EXPECT_FALSE(decode_far_topic_key(std::string(19, '\0')));
}

TEST(FarEncoding, ARecordMustBeItsKeys) {
  JobRecord r = make(5);
  const std::string value = encode_record(r);
  Result<JobRecord> ok = decode_far_record(far_key(engine::far_key(r)), value);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(*ok, r);

  FarKey other_due = engine::far_key(r);
  other_due.due += 1ns;
  Result<JobRecord> due = decode_far_record(far_key(other_due), value);
  EXPECT_TRUE(due.is(Errc::corrupt));
  EXPECT_NE(due.status().message().find("family 'far'"), std::string::npos)
      << due.status().message();
  FarKey other_seq = engine::far_key(r);
  other_seq.seq = 6;
  EXPECT_TRUE(decode_far_record(far_key(other_seq), value).is(Errc::corrupt));
  EXPECT_TRUE(decode_far_record("short", value).is(Errc::corrupt));
}

TEST(FarEncoding, HorizonAndCountsRoundTripAndRefuseGarbage) {
  const FarKey k = key(1'700'000'000'000'000'000, 42);
  EXPECT_EQ(hex(encode_horizon(k)).substr(0, 2), "01");
  Result<FarKey> h = decode_horizon(encode_horizon(k));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, k);
  EXPECT_TRUE(decode_horizon(encode_horizon(k).substr(1)).is(Errc::corrupt));
  EXPECT_TRUE(decode_horizon("\x02" + far_key(k)).is(Errc::corrupt));

  EXPECT_EQ(hex(encode_count(258)),
            "01"
            "0201000000000000");
  EXPECT_EQ(*decode_count(encode_count(UINT64_MAX)), UINT64_MAX);
  EXPECT_TRUE(decode_count(encode_count(1) + "x").is(Errc::corrupt));
  EXPECT_EQ(far_count_key("orders"), "far-count/orders");
}

class JournalFar : public ::testing::Test {
 protected:
  std::unique_ptr<Journal> open(bool tiered = true) {
    JournalOptions o;
    o.sync.mode = Sync::none;
    o.tiered = tiered;
    auto j = Journal::open(dir_.path(), o);
    EXPECT_TRUE(j.ok()) << j.status().to_string();
    return j.ok() ? std::move(j).value() : nullptr;
  }
  static void write(Journal& j, const FarBatch& far, const std::vector<engine::Change>& jobs = {}) {
    Result<uint64_t> t = j.append(jobs, Stats(), engine::Counters(), far);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    ASSERT_TRUE(j.sync_to(*t).ok());
    EXPECT_GE(j.written(), *t);
  }
  static std::vector<uint64_t> seqs_in(Journal& j, FarKey from, FarKey below) {
    std::vector<uint64_t> out;
    Status st = JournalTier(j).scan(from, below, [&](JobRecord&& r) {
      out.push_back(r.seq);
      return true;
    });
    EXPECT_TRUE(st.ok()) << st.to_string();
    return out;
  }
  testing::TempDir dir_;
};

JobRecord far_job(uint64_t seq, int64_t due_ns, std::string topic = "t") {
  JobRecord r = make(seq);
  r.due = TimePoint(Duration(due_ns));
  r.topic = std::move(topic);
  return r;
}

TEST_F(JournalFar, PutsAreFoundByIdAndScannedInKeyOrderFromAnyBound) {
  auto j = open();
  ASSERT_TRUE(j);
  // Pushed in seq order, due in another order: the scan gives due order, ties by seq.
  FarBatch b;
  for (auto [seq, due] : std::vector<std::pair<uint64_t, int64_t>>{
           {1, 5000}, {2, 3000}, {3, 3000}, {4, 9000}, {5, 1000}})
    b.changes.push_back(FarChange{true, far_job(seq, due)});
  write(*j, b);
  EXPECT_EQ(seqs_in(*j, {}, key(INT64_MAX, 0)), (std::vector<uint64_t>{5, 2, 3, 1, 4}));
  EXPECT_EQ(seqs_in(*j, key(3000, 3), key(9000, 0)), (std::vector<uint64_t>{3, 1}));
  EXPECT_TRUE(seqs_in(*j, key(9000, 5), key(INT64_MAX, 0)).empty());
  Result<std::optional<JobRecord>> found = JournalTier(*j).find("id-4");
  ASSERT_TRUE(found.ok()) << found.status().to_string();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ(**found, far_job(4, 9000));
  EXPECT_FALSE(JournalTier(*j).find("id-6")->has_value());
  // fn may stop the scan.
  int seen = 0;
  ASSERT_TRUE(
      JournalTier(*j).scan({}, key(INT64_MAX, 0), [&](JobRecord&&) { return ++seen < 2; }).ok());
  EXPECT_EQ(seen, 2);
}

TEST_F(JournalFar, RemovesMovesCountsAndTheHorizonSurviveAReopen) {
  {
    auto j = open();
    ASSERT_TRUE(j);
    ASSERT_TRUE(JournalTier(*j).counts().ok());
    FarBatch b;
    b.changes = {FarChange{true, far_job(1, 1000, "a")}, FarChange{true, far_job(2, 2000, "a")},
                 FarChange{true, far_job(3, 3000, "b")}};
    write(*j, b);
    // Job 1 moves into memory (a refill), job 2 moves on disk (a reschedule), job 3 is
    // cancelled: one batch.
    FarBatch m;
    m.changes = {FarChange{false, far_job(1, 1000, "a")}, FarChange{false, far_job(2, 2000, "a")},
                 FarChange{true, far_job(2, 7000, "a")}, FarChange{false, far_job(3, 3000, "b")}};
    m.horizon = key(1500, 0);
    write(*j, m, {engine::Change{1, far_job(1, 1000, "a")}});
  }
  auto j = open(false);
  ASSERT_TRUE(j);
  EXPECT_EQ(*JournalTier(*j).horizon(), key(1500, 0));
  Result<engine::TopicCounts> counts = JournalTier(*j).counts();
  ASSERT_TRUE(counts.ok()) << counts.status().to_string();
  EXPECT_EQ(*counts, (engine::TopicCounts{{"a", 1}}));  // b's count went to 0: deleted
  EXPECT_EQ(seqs_in(*j, {}, key(INT64_MAX, 0)), (std::vector<uint64_t>{2}));
  EXPECT_EQ((*JournalTier(*j).find("id-2"))->due, TimePoint(Duration(7000)));
  EXPECT_FALSE(JournalTier(*j).find("id-1")->has_value());
  EXPECT_FALSE(JournalTier(*j).find("id-3")->has_value());
  std::vector<uint64_t> in_jobs;
  ASSERT_TRUE(j->scan([&](JobRecord&& r) {
                 in_jobs.push_back(r.seq);
                 return Status();
               }).ok());
  EXPECT_EQ(in_jobs, (std::vector<uint64_t>{1}));
}

TEST_F(JournalFar, AStoreWithoutTheTierRefusesFarWritesAndReadsNothing) {
  auto j = open(false);
  ASSERT_TRUE(j);
  EXPECT_FALSE(JournalTier(*j).present());
  FarBatch b;
  b.changes.push_back(FarChange{true, far_job(1, 1000)});
  EXPECT_TRUE(j->append({}, Stats(), engine::Counters(), b).is(Errc::invalid_argument));
  EXPECT_FALSE(JournalTier(*j).find("id-1")->has_value());
  EXPECT_TRUE(seqs_in(*j, {}, key(INT64_MAX, 0)).empty());
  EXPECT_EQ(*JournalTier(*j).horizon(), FarKey{});
}

}  // namespace
}  // namespace delayq::wal
