// The two truths include/delayq/error.h states beside Status::code(): a Status (and a Result)
// is true on success, its code() (a std::error_code) true on failure.
#include <gtest/gtest.h>

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

}  // namespace
