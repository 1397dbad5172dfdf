// The list_jobs() cursor codec (src/common/cursor.h): what encode() writes decode() reads back
// exactly, and each kind of bad cursor is refused with its own words.
#include <gtest/gtest.h>

#include <random>

#include "common/cursor.h"

namespace delayq {
namespace {

cursor::Cursor sample() {
  cursor::Cursor c;
  c.state = JobState::ready;
  c.topic_fp = cursor::topic_fingerprint("emails");
  c.boundary = {.priority = 7, .at = -5, .seq = 123456789012345ull, .shard = 3};
  c.shards = {"", cursor::pack({"job-1", "job-0"}), std::string("\0\xff", 2)};
  return c;
}

std::string why(std::string_view text, std::string_view topic = "emails",
                JobState state = JobState::ready) {
  Result<cursor::Cursor> r = cursor::decode(text, topic, state);
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), Errc::invalid_argument);
  return r.status().message();
}

TEST(Cursor, RoundTrips) {
  const cursor::Cursor c = sample();
  const std::string text = cursor::encode(c);
  EXPECT_TRUE(text.starts_with("c1."));
  EXPECT_EQ(text.find_first_not_of(
                "c1.ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
            std::string::npos);
  Result<cursor::Cursor> back = cursor::decode(text, "emails", JobState::ready);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, c);
  EXPECT_EQ(cursor::unpack(back->shards[1]), (std::vector<std::string>{"job-1", "job-0"}));

  // Every state, extreme keys, no shard positions at all.
  for (JobState s : {JobState::delayed, JobState::ready, JobState::reserved, JobState::dead}) {
    cursor::Cursor e{.state = s,
                     .topic_fp = cursor::topic_fingerprint("t"),
                     .boundary = {UINT32_MAX, INT64_MIN, UINT64_MAX, UINT32_MAX}};
    Result<cursor::Cursor> r = cursor::decode(cursor::encode(e), "t", s);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(*r, e);
  }
}

TEST(Cursor, ADifferentPrefixIsNotOurs) {
  const std::string text = cursor::encode(sample());
  EXPECT_NE(why("c2" + text.substr(2)).find("not a delayq cursor"), std::string::npos);
  EXPECT_NE(why(text.substr(3)).find("not a delayq cursor"), std::string::npos);
  EXPECT_NE(why("").find("not a delayq cursor"), std::string::npos);
}

TEST(Cursor, EveryFlippedCharacterIsRefusedAsDamaged) {
  const std::string text = cursor::encode(sample());
  for (size_t i = 3; i < text.size(); ++i)
    for (char to : {'A', 'b', '-', '_', '9', '=', '/'}) {
      if (text[i] == to) continue;
      std::string bad = text;
      bad[i] = to;
      EXPECT_NE(why(bad).find("cursor is damaged"), std::string::npos) << i << " " << to;
    }
}

TEST(Cursor, FlippedBitsInTheBytesFailTheChecksum) {
  // Re-encode the bytes with one bit flipped, so that the text is valid base64url.
  const std::string text = cursor::encode(sample());
  std::mt19937 rng(1);
  for (int k = 0; k < 200; ++k) {
    std::string bad = text;
    const size_t i = 3 + rng() % (bad.size() - 4);  // not the last character (its unused bits)
    const std::string_view alphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const size_t v = alphabet.find(bad[i]);
    bad[i] = alphabet[v ^ (size_t{1} << (rng() % 6))];
    EXPECT_NE(why(bad).find("checksum"), std::string::npos) << bad;
  }
}

TEST(Cursor, TruncatedOrExtendedIsDamaged) {
  const std::string text = cursor::encode(sample());
  for (size_t n = 3; n < text.size(); ++n)
    EXPECT_NE(why(text.substr(0, n)).find("cursor is damaged"), std::string::npos) << n;
  EXPECT_NE(why(text + "AAAA").find("cursor is damaged"), std::string::npos);
  EXPECT_NE(why("c1." + std::string(2'000'000, 'A')).find("too long"), std::string::npos);
}

TEST(Cursor, AnotherTopicOrStateIsRefusedByName) {
  const std::string text = cursor::encode(sample());
  EXPECT_NE(why(text, "invoices").find("cursor belongs to another topic"), std::string::npos);
  EXPECT_EQ(why(text, "emails", JobState::dead), "cursor is for state ready, not dead");
  EXPECT_EQ(why(text), "");
}

TEST(Cursor, UnpackRefusesWhatPackDidNotWrite) {
  EXPECT_EQ(cursor::unpack(""), std::vector<std::string>{});
  EXPECT_EQ(cursor::unpack(cursor::pack({"", "a"})), (std::vector<std::string>{"", "a"}));
  EXPECT_EQ(cursor::unpack(std::string("\x05\x00" "abc", 5)), std::nullopt);
  EXPECT_EQ(cursor::unpack("\x01"), std::nullopt);
}

}  // namespace
}  // namespace delayq
