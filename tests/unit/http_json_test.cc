// The strict JSON reader and the writer of delayqd, against good and hostile input.
#include "wire/json.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace json = delayq::wire::json;

namespace {

bool accepts(std::string_view text) { return json::parse(text).ok(); }

TEST(HttpJson, ParsesEveryKind) {
  auto v = json::parse(
      R"( {"s":"a\"b\\c\/\n\u00e9\ud83d\ude00","i":-42,"d":1.5e3,"t":true,"f":false,"n":null,
          "a":[1,[],{}],"o":{"k":"v"}} )");
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->find("s")->as_string(), "a\"b\\c/\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_TRUE(v->find("i")->is_int());
  EXPECT_EQ(v->find("i")->as_int(), -42);
  EXPECT_FALSE(v->find("d")->is_int());
  EXPECT_DOUBLE_EQ(v->find("d")->as_double(), 1500);
  EXPECT_TRUE(v->find("t")->as_bool());
  EXPECT_FALSE(v->find("f")->as_bool());
  EXPECT_TRUE(v->find("n")->is_null());
  EXPECT_EQ(v->find("a")->as_array().size(), 3u);
  EXPECT_EQ(v->find("o")->find("k")->as_string(), "v");
  EXPECT_EQ(v->find("missing"), nullptr);
}

TEST(HttpJson, BigIntegersStayExact) {
  auto v = json::parse("9007199254740993");
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->is_int());
  EXPECT_EQ(v->as_int(), 9007199254740993);
  auto big = json::parse("99999999999999999999");  // beyond int64: a double, not an int
  ASSERT_TRUE(big.ok());
  EXPECT_FALSE(big->is_int());
}

TEST(HttpJson, RefusesWhatIsNotJson) {
  const char* bad[] = {
      "",            " ",          "{",           "}",          "[1,]",        "{\"a\":1,}",
      "{'a':1}",     "{a:1}",      "01",          "-",          "1.",          ".5",
      "1e",          "+1",         "NaN",         "Infinity",   "tru",         "nul",
      "\"abc",       "\"\\x\"",    "\"\\u12\"",   "\"\\ud800\"", "\"\\udc00\"", "[1 2]",
      "{\"a\" 1}",   "1 2",        "{} x",        "/* c */ {}", "\"a\tb\"",    "1e999",
      "{\"a\":1,\"a\":2}",  // duplicate keys: ambiguous, refused
      "\"\xff\"",           // invalid UTF-8
      "\"\xc0\xaf\"",       // overlong encoding
      "\"\xed\xa0\x80\"",   // a surrogate encoded in UTF-8
  };
  for (const char* text : bad) EXPECT_FALSE(accepts(text)) << "accepted: " << text;
}

TEST(HttpJson, ErrorsNameTheOffset) {
  auto v = json::parse("{\"a\": tru}");
  ASSERT_FALSE(v.ok());
  EXPECT_TRUE(v.is(delayq::Errc::invalid_argument));
  EXPECT_NE(v.status().message().find("byte 6"), std::string::npos) << v.status().message();
}

TEST(HttpJson, DeepNestingIsRefusedNotACrash) {
  EXPECT_TRUE(accepts(std::string(64, '[') + std::string(64, ']')));
  EXPECT_FALSE(accepts(std::string(65, '[') + std::string(65, ']')));
  EXPECT_FALSE(accepts(std::string(1'000'000, '[')));
  std::string objects;
  for (int i = 0; i < 100'000; ++i) objects += "{\"a\":";
  EXPECT_FALSE(accepts(objects));
}

// Each cap refuses with its name and value, and a document just inside every cap is read.
TEST(HttpJson, CapsNameThemselves) {
  const auto joined = [](size_t n, const std::function<std::string(size_t)>& f) {
    std::string out;
    for (size_t i = 0; i < n; ++i) out += (i ? "," : "") + f(i);
    return out;
  };
  const auto member = [](size_t i) { return "\"k" + std::to_string(i) + "\":0"; };
  const auto zero = [](size_t) { return std::string("0"); };
  const auto refusal = [](const std::string& text) {
    auto v = json::parse(text);
    return v.ok() ? std::string("accepted") : v.status().message();
  };
  EXPECT_TRUE(accepts("{" + joined(256, member) + "}"));
  EXPECT_NE(refusal("{" + joined(257, member) + "}").find("over the cap of 256 members in one object"),
            std::string::npos);
  EXPECT_TRUE(accepts("[" + joined(10000, zero) + "]"));
  EXPECT_NE(refusal("[" + joined(10001, zero) + "]").find("over the cap of 10000 elements in one array"),
            std::string::npos);
  // 10 arrays of 9999 zeros: 99990 values, plus 11 arrays: 100001.
  const std::string inner = "[" + joined(9999, zero) + "]";
  EXPECT_TRUE(accepts("[" + joined(9, [&](size_t) { return inner; }) + "]"));
  EXPECT_NE(refusal("[" + joined(10, [&](size_t) { return inner; }) + "]")
                .find("over the cap of 100000 values in one document"),
            std::string::npos);
  EXPECT_TRUE(accepts("1" + std::string(63, '0')));
  EXPECT_NE(refusal("1" + std::string(64, '0')).find("over the cap of 64 characters in one number"),
            std::string::npos);
  // The caller chooses other caps (the CLI reads long answers of a trusted daemon).
  EXPECT_TRUE(json::parse("[" + joined(20000, zero) + "]", json::kReplyLimits).ok());
  EXPECT_TRUE(json::parse("{" + joined(1000, member) + "}", json::kReplyLimits).ok())
      << "/stats of a queue with many topics";
}

// Duplicate keys are found by sorting each object's keys: the comparisons grow as n log n with
// the members of an object, not n^2 (which made an object of 460k keys cost minutes).
TEST(HttpJson, DuplicateKeysAreFoundInLinearisedTime) {
  std::string doc = "[";
  for (int o = 0; o < 300; ++o) {
    doc += o ? ",{" : "{";
    for (int k = 0; k < 256; ++k)
      doc += (k ? ",\"" : "\"") + std::string(36, 'p') + std::to_string(1000 + k) + "\":1";
    doc += "}";
  }
  doc += "]";
  json::ParseCounts counts;
  ASSERT_TRUE(json::parse(doc, {}, &counts).ok());
  EXPECT_EQ(counts.values, 1u + 300u * 257u);
  // A sort of 256 keys takes about 256 * log2(256) = 2048 comparisons; every pair would be 32640.
  EXPECT_LE(counts.key_comparisons, 300u * 256u * 12u) << counts.key_comparisons;
  EXPECT_GE(counts.key_comparisons, 300u * 255u) << "every key is compared at least once";
  auto dup = json::parse(R"({"b":1,"a":2,"c":3,"a":4,"b":5})");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().message(), "bad JSON at byte 19: duplicate key \"a\"");
}

TEST(HttpJson, NulAndControlBytes) {
  EXPECT_FALSE(accepts(std::string("\"a\0b\"", 5)));
  EXPECT_FALSE(accepts(std::string("{}\0", 3)));
  auto v = json::parse("\"a\\u0000b\"");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->as_string(), std::string("a\0b", 3));
}

TEST(HttpJson, WriterEscapesAndRoundTrips) {
  json::Writer w;
  const std::string tricky = std::string("q\"b\\s\n\t\x01\x7f", 9) + "\xc3\xa9";
  w.begin_object().key("s").value(tricky).key("n").value(int64_t{-7}).key("u");
  w.value(uint64_t{18446744073709551615u}).key("d").value(0.1).key("b").value(true);
  w.key("z").null().key("a").begin_array().value(1).value("x").end_array().end_object();
  auto back = json::parse(w.str());
  ASSERT_TRUE(back.ok()) << w.str();
  EXPECT_EQ(back->find("s")->as_string(), tricky);
  EXPECT_EQ(back->find("n")->as_int(), -7);
  EXPECT_EQ(w.str().find("0.1,") != std::string::npos, true) << w.str();
  EXPECT_EQ(back->find("a")->as_array().size(), 2u);
}

TEST(HttpJson, WriterReplacesInvalidUtf8) {
  std::string out;
  json::append_string(out, "a\xff" "b\xc3");
  EXPECT_EQ(out, "\"a\\ufffdb\\ufffd\"");
  EXPECT_TRUE(accepts(out));
}

TEST(HttpJson, RandomBytesNeverCrash) {
  // A cheap in-test fuzz; the libFuzzer target (scripts/fuzz.sh) goes much further.
  uint64_t x = 88172645463325252u;
  const std::string alphabet = "{}[]\",:0123456789.-+eEtruefalsn \\u\xc3\xa9\xff";
  for (int i = 0; i < 20'000; ++i) {
    std::string s;
    const size_t n = (x % 40);
    for (size_t k = 0; k < n; ++k) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      s += alphabet[x % alphabet.size()];
    }
    (void)json::parse(s);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
}

}  // namespace
