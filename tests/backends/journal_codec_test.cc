// The journal's byte layout (wal/codec.h): every record round-trips, and any damaged input is
// corrupt, never a crash or a huge allocation.
#include "wal/codec.h"

#include <random>
#include <string>

#include <gtest/gtest.h>

#include "journal_records.h"

namespace delayq::wal {
namespace {

using engine::JobRecord;
using test_records::full;
using test_records::make;

TEST(JournalEncoding, RoundTripsEveryFieldForEveryRetryKind) {
  for (auto kind :
       {RetryPolicy::Kind::fixed, RetryPolicy::Kind::list, RetryPolicy::Kind::exponential}) {
    const JobRecord r = full(42, kind);
    auto d = decode_record(42, encode_record(r));
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    EXPECT_EQ(*d, r);
    EXPECT_EQ(d->retry.kind, kind);
  }
  for (auto state : {JobState::delayed, JobState::ready, JobState::reserved, JobState::dead}) {
    JobRecord r = make(1);
    r.state = state;
    auto d = decode_record(1, encode_record(r));
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->state, state);
  }
}

TEST(JournalEncoding, RoundTripsEmptyAndLargeBodies) {
  JobRecord empty = make(3, "");
  empty.id.clear();
  empty.topic.clear();
  auto d = decode_record(3, encode_record(empty));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, empty);

  std::string big(1 << 20, '\0');
  std::mt19937_64 rng(7);
  for (char& c : big) c = static_cast<char>(rng());
  const JobRecord r = make(UINT64_MAX, big);
  auto e = decode_record(UINT64_MAX, encode_record(r));
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, r);
}

TEST(JournalEncoding, StartsWithTheRecordVersion) {
  EXPECT_EQ(encode_record(make(1))[0], '\x01');
  JobRecord urgent = make(1);
  urgent.priority = 0;
  EXPECT_EQ(encode_record(urgent)[0], '\x02');
}

// Version 1 at the default priority (what builds before priorities read), version 2 at any other
// priority: every value round-trips, and version 1 reads as the default.
TEST(JournalEncoding, ThePriorityPicksTheRecordVersionAndRoundTrips) {
  for (const uint32_t priority : {0u, 1u, 1023u, 1024u, 1025u, UINT32_MAX}) {
    JobRecord r = make(8);
    r.priority = priority;
    const std::string bytes = encode_record(r);
    EXPECT_TRUE(needs_version_2(r) == (priority != kDefaultPriority)) << priority;
    EXPECT_EQ(bytes[0], priority == kDefaultPriority ? '\x01' : '\x02') << priority;
    EXPECT_EQ(bytes.size(), encode_record(make(8)).size() + (priority == kDefaultPriority ? 0 : 4));
    auto d = decode_record(8, bytes);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    EXPECT_EQ(*d, r);
  }
  auto v1 = decode_record(8, encode_record(make(8)));
  ASSERT_TRUE(v1.ok());
  EXPECT_EQ(v1->priority, kDefaultPriority);
}

// A version 2 record cut inside its priority, or holding the default priority (which is written
// as version 1: only damage puts it there), is corrupt.
TEST(JournalEncoding, AVersion2RecordNeedsItsWholePriorityAndNotTheDefault) {
  JobRecord r = make(4);
  r.priority = 10;
  const std::string bytes = encode_record(r);
  for (size_t cut = 1; cut <= 4; ++cut) {
    auto d = decode_record(4, std::string_view(bytes).substr(0, bytes.size() - cut));
    EXPECT_TRUE(d.is(Errc::corrupt));
    EXPECT_EQ(d.status().message(),
              "record seq 4 in family 'jobs': truncated in field 'priority' (needs 4 bytes, " +
                  std::to_string(4 - cut) + " left)");
  }
  std::string v1_as_v2 = encode_record(make(4));
  v1_as_v2[0] = 2;
  v1_as_v2 += std::string("\x00\x04\x00\x00", 4);  // 1024, little-endian
  auto d = decode_record(4, v1_as_v2);
  EXPECT_TRUE(d.is(Errc::corrupt));
  EXPECT_EQ(d.status().message(),
            "record seq 4 in family 'jobs': record version 2 holds the default priority 1024, "
            "which is written as version 1");
  // A priority after a version 1 record is a trailing byte, not a priority.
  std::string v1_with_more = encode_record(make(4)) + std::string("\x0a\x00\x00\x00", 4);
  EXPECT_TRUE(decode_record(4, v1_with_more).is(Errc::corrupt));
}

// The worked examples of docs/journal-format.md, byte for byte: the doc and the code agree.
TEST(JournalEncoding, MatchesTheExamplesOfTheFormatDoc) {
  JobRecord r;
  r.seq = 258;
  r.id = "order-42";
  r.topic = "orders";
  r.body = "2 x beans";
  r.state = JobState::reserved;
  r.due = TimePoint(std::chrono::seconds(1704067200));  // 2024-01-01T00:00:00Z
  r.lease_deadline = r.due + 30s;
  r.ttr = 30s;
  r.attempts = 1;
  r.fence = 7;
  r.retry = RetryPolicy::list({2min, 10min});
  r.priority = kDefaultPriority;  // version 1: the bytes of the builds before priorities
  EXPECT_EQ(hex(job_key(258)), "0000000000000102");
  EXPECT_EQ(hex(encode_record(r)),
            "01"                  // version
            "0201000000000000"    // seq
            "02"                  // state: reserved
            "000065011710a617"    // due
            "00ac88fd1d10a617"    // lease_deadline
            "00ac23fc06000000"    // ttr
            "01000000"            // attempts
            "0700000000000000"    // fence
            "08000000"            // id: 8 bytes,
            "6f726465722d3432"    // "order-42"
            "06000000"            // topic: 6 bytes,
            "6f7264657273"        // "orders"
            "09000000"            // body: 9 bytes,
            "322078206265616e73"  // "2 x beans"
            "01"                  // retry.kind: list
            "03000000"            // retry.max_attempts
            "00ca9a3b00000000"    // retry.base
            "0000000000000040"    // retry.factor
            "00a0b83046030000"    // retry.cap
            "0000000000000000"    // retry.jitter
            "02000000"            // 2 delays:
            "00b08ef01b000000"    // 2 min
            "0070c9b28b000000");  // 10 min
  // The same job at priority 10: version 2, the same fields, then the priority (142 bytes).
  const std::string v1 = hex(encode_record(r));
  r.priority = 10;
  EXPECT_EQ(hex(encode_record(r)), "02" + v1.substr(2) +
                                       "0a000000");  // priority
  EXPECT_EQ(encode_record(r).size(), 142u);
  EXPECT_EQ(encode_format(1), "1");
  EXPECT_EQ(encode_format(3), "3");
  EXPECT_EQ(hex(encode_totals(Stats{.pushed = 3, .delivered = 1, .acked = 1})),
            "02"                // version
            "0300000000000000"  // pushed
            "0100000000000000"  // delivered
            "0100000000000000" +
                std::string(7 * 16, '0'));  // acked, then seven zeros
  EXPECT_EQ(hex(encode_counters({.fences = 7, .next_id = 1704067200000000123u})),
            "01"                  // version
            "0700000000000000"    // fences
            "7b0065011710a617");  // next_id
  // With a disk tier, the seqs too (version 2).
  EXPECT_EQ(hex(encode_counters({.fences = 7, .next_id = 1704067200000000123u, .seqs = 258})),
            "02"                  // version
            "0700000000000000"    // fences
            "7b0065011710a617"    // next_id
            "0201000000000000");  // seqs
}

TEST(JournalEncoding, CountersOfVersion1And2RoundTrip) {
  for (const engine::Counters c :
       {engine::Counters{7, 9, 0}, engine::Counters{7, 9, 11}, engine::Counters{0, 0, 1}}) {
    Result<engine::Counters> d = decode_counters(encode_counters(c));
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    EXPECT_EQ(*d, c);
  }
  EXPECT_TRUE(decode_counters("\x03" + std::string(24, '\0')).is(Errc::corrupt));
  EXPECT_TRUE(decode_counters("\x02" + std::string(16, '\0')).is(Errc::corrupt));
}

// A store written before `released` was kept has version 1 totals; the next write stores them as
// version 2, `released` 0 (tests/fuzz/journal_record_fuzz.cc checks the same on any input).
TEST(JournalEncoding, Version1TotalsAreWrittenBackAsVersion2) {
  const std::string v1 = "\x01" + std::string(9 * 8, '\xff');
  Result<Stats> t = decode_totals(v1);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->purged, UINT64_MAX);
  EXPECT_EQ(t->released, 0u);
  EXPECT_EQ(encode_totals(*t), "\x02" + std::string(9 * 8, '\xff') + std::string(8, '\0'));
}

TEST(JournalEncoding, EveryTruncationIsCorrupt) {
  const std::string bytes = encode_record(full(9, RetryPolicy::Kind::list));
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto d = decode_record(9, std::string_view(bytes.data(), n));
    ASSERT_FALSE(d.ok()) << "prefix of " << n << " bytes decoded";
    EXPECT_TRUE(d.is(Errc::corrupt)) << d.status().to_string();
    EXPECT_NE(d.status().message().find("seq 9"), std::string::npos) << d.status().message();
    if (n == 20) {  // the whole message, for one of them
      EXPECT_EQ(d.status().message(),
                "record seq 9 in family 'jobs': truncated in field 'lease_deadline' (needs 8 "
                "bytes, 2 left)");
    }
  }
}

TEST(JournalEncoding, RejectsTrailingBytesWrongSeqAndBadEnums) {
  const std::string good = encode_record(make(5));

  auto trailing = decode_record(5, good + "x");
  EXPECT_TRUE(trailing.is(Errc::corrupt));
  EXPECT_NE(trailing.status().message().find("unexpected bytes"), std::string::npos);

  auto other = decode_record(6, good);
  EXPECT_TRUE(other.is(Errc::corrupt));
  EXPECT_NE(other.status().message().find("seq 6"), std::string::npos);

  for (const uint8_t unknown : {0, 3, 255}) {
    std::string v = good;
    v[0] = static_cast<char>(unknown);
    auto version = decode_record(5, v);
    EXPECT_TRUE(version.is(Errc::corrupt));
    EXPECT_EQ(version.status().message(), "record seq 5 in family 'jobs': unknown record version " +
                                              std::to_string(unknown) +
                                              " (this build reads 1 and 2)");
  }

  std::string s = good;
  s[9] = 4;  // state, right after version and seq
  EXPECT_TRUE(decode_record(5, s).is(Errc::corrupt));
}

TEST(JournalEncoding, HugeLengthPrefixesAreCorruptNotAllocated) {
  // version, seq, state, 3 times i64, u32, u64, then id's length: 0xffffffff.
  std::string b = encode_record(make(1)).substr(0, 1 + 8 + 1 + 24 + 4 + 8);
  b += std::string("\xff\xff\xff\xff", 4);
  b += "short";
  auto d = decode_record(1, b);
  EXPECT_TRUE(d.is(Errc::corrupt));
  EXPECT_EQ(d.status().message(),
            "record seq 1 in family 'jobs': field 'id' claims 4294967295 bytes but only 5 are "
            "left");

  // A delays count of 0xffffffff.
  JobRecord r = make(1);
  r.retry.delays.clear();
  std::string e = encode_record(r);
  e.replace(e.size() - 4, 4, "\xff\xff\xff\xff");
  auto d2 = decode_record(1, e);
  EXPECT_TRUE(d2.is(Errc::corrupt));
  EXPECT_EQ(d2.status().message(),
            "record seq 1 in family 'jobs': retry.delays claims 4294967295 entries (34359738360 "
            "bytes) but only 0 bytes are left");
}

TEST(JournalEncoding, RandomMutationsNeverCrash) {
  const std::string good = encode_record(full(77, RetryPolicy::Kind::exponential));
  std::mt19937_64 rng(12345);
  int decoded = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string b = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits; ++k) {
      switch (rng() % 3) {
        case 0:
          b[rng() % b.size()] = static_cast<char>(rng());
          break;
        case 1:
          b.resize(rng() % (b.size() + 1));
          break;
        case 2:
          b.insert(rng() % (b.size() + 1), 1, static_cast<char>(rng()));
          break;
      }
      if (b.empty()) b = "\x01";
    }
    auto d = decode_record(77, b);
    if (d.ok()) {
      ++decoded;
    } else {
      EXPECT_TRUE(d.is(Errc::corrupt));
    }
  }
  // Pure garbage too.
  for (int i = 0; i < 2000; ++i) {
    std::string b(rng() % 200, '\0');
    for (char& c : b) c = static_cast<char>(rng());
    if (!b.empty() && rng() % 2) b[0] = 1;
    auto d = decode_record(1, b);
    if (!d.ok()) {
      EXPECT_TRUE(d.is(Errc::corrupt));
    }
  }
  SUCCEED() << decoded << " mutations still decoded";
}

}  // namespace
}  // namespace delayq::wal
