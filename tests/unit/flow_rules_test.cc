// The input rules of flow control and browsing (src/common/flow_rules.h): each refusal names the
// field that is wrong, and the defaults a backend has not replaced refuse plainly.
#include <gtest/gtest.h>

#include "common/flow_rules.h"
#include "delayq/engine.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;

std::string why(const TopicLimits& l, std::string_view topic = "t") {
  Status st = rules::check_topic_limits(topic, l, 24h);
  EXPECT_TRUE(st.ok() || st.code() == Errc::invalid_argument) << st.message();
  return st.ok() ? "" : st.message();
}

TEST(FlowRules, GoodLimitsPass) {
  EXPECT_EQ(why({.rate = TopicLimits::Rate{50, 1s, 10}}), "");
  EXPECT_EQ(why({.max_in_flight = 1}), "");
  EXPECT_EQ(why({.rate = TopicLimits::Rate{1, 24h, rules::kMaxBurst}, .max_in_flight = 7}), "");
}

TEST(FlowRules, EachBadFieldIsNamed) {
  EXPECT_NE(why({}).find("set a rate or max_in_flight"), std::string::npos);
  EXPECT_NE(why({.rate = TopicLimits::Rate{0, 1s, 1}}).find("rate count must be at least 1"),
            std::string::npos);
  EXPECT_NE(why({.rate = TopicLimits::Rate{5, 0s, 1}}).find("rate period must be positive"),
            std::string::npos);
  EXPECT_NE(why({.rate = TopicLimits::Rate{5, -1s, 1}}).find("rate period must be positive"),
            std::string::npos);
  EXPECT_NE(why({.rate = TopicLimits::Rate{5, 25h, 1}}).find("exceeds max_delay"),
            std::string::npos);
  EXPECT_NE(why({.rate = TopicLimits::Rate{5, 1s, 0}}).find("burst must be between 1 and"),
            std::string::npos);
  EXPECT_NE(why({.rate = TopicLimits::Rate{5, 1s, rules::kMaxBurst + 1}}).find("burst"),
            std::string::npos);
  EXPECT_NE(why({.max_in_flight = 0}).find("max_in_flight must be at least 1"),
            std::string::npos);
  EXPECT_NE(why({.max_in_flight = 1}, "").find("topic is empty"), std::string::npos);
  EXPECT_NE(why({.max_in_flight = 1}, std::string(300, 'x')).find("300 bytes"),
            std::string::npos);
}

TEST(FlowRules, PageLimitsAndStates) {
  EXPECT_FALSE(rules::check_list_limit(0).ok());
  EXPECT_TRUE(rules::check_list_limit(1).ok());
  EXPECT_TRUE(rules::check_list_limit(1000).ok());
  EXPECT_NE(rules::check_list_limit(1001).message().find("between 1 and 1000"), std::string::npos);
  for (JobState s : {JobState::delayed, JobState::ready, JobState::reserved, JobState::dead})
    EXPECT_EQ(rules::parse_state(to_string(s)), s);
  EXPECT_EQ(rules::parse_state("Ready"), std::nullopt);
  EXPECT_EQ(rules::parse_state(""), std::nullopt);
}

TEST(FlowRules, JobsDefaultToPriority1024) {
  EXPECT_EQ(JobSpec{}.priority, 1024u);
  EXPECT_EQ(JobInfo{}.priority, kDefaultPriority);
  EXPECT_EQ(Delivery{}.priority, kDefaultPriority);
}

}  // namespace
}  // namespace delayq
