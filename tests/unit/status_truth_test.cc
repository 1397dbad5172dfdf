// The two truths include/delayq/error.h states beside Status::code(): a Status (and a Result)
// is true on success, its code() (a std::error_code) true on failure.
#include <gtest/gtest.h>

#include <string>
#include <system_error>

#include "delayq/error.h"

namespace {

using delayq::Errc;
using delayq::Result;
using delayq::Status;

TEST(StatusTruth, AStatusIsTrueOnSuccessItsCodeOnFailure) {
  const Status good;
  EXPECT_TRUE(static_cast<bool>(good));
  EXPECT_FALSE(static_cast<bool>(good.code()));
  EXPECT_TRUE(good.ok());

  const Status bad(Errc::not_found, "no such job");
  EXPECT_FALSE(static_cast<bool>(bad));
  EXPECT_TRUE(static_cast<bool>(bad.code()));
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), std::error_code(Errc::not_found));
}

TEST(StatusTruth, AResultLikewise) {
  const Result<int> good = 7;
  EXPECT_TRUE(static_cast<bool>(good));
  EXPECT_FALSE(static_cast<bool>(good.code()));

  const Result<int> bad = Status(Errc::timeout, "nothing came");
  EXPECT_FALSE(static_cast<bool>(bad));
  EXPECT_TRUE(static_cast<bool>(bad.code()));
  EXPECT_TRUE(bad.is(Errc::timeout));
}

// value() of a failed Result throws BadResultAccess, whose what() is the failure's to_string()
// (docs/redis.md's snippet relies on it).
TEST(StatusTruth, TheValueOfAFailedResultThrowsWhatWentWrong) {
  Result<int> bad = Status(Errc::not_found, "no job with id 'x'");
  try {
    (void)bad.value();
    ADD_FAILURE() << "value() did not throw";
  } catch (const delayq::BadResultAccess& e) {
    EXPECT_EQ(std::string(e.what()), bad.status().to_string());
    EXPECT_NE(std::string(e.what()).find("no job with id 'x'"), std::string::npos) << e.what();
  }
}

}  // namespace
