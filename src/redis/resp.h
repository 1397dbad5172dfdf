// A Redis server's reply as a plain value, apart from hiredis (which stays inside resp.cc and
// connection.cc), and the reading of RESP bytes into replies.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "delayq/error.h"

struct redisReply;  // hiredis

namespace delayq::redis {

// A server reply, copied out of hiredis.
struct Reply {
  enum class Type : uint8_t { nil, integer, string, array, status, error };
  Type type = Type::nil;
  int64_t integer = 0;
  std::string str;  // string, status and error replies
  std::vector<Reply> elements;

  bool is_error() const { return type == Type::error; }
  // An integer reply, or a string/status that holds a decimal integer; else `fallback`.
  int64_t as_int(int64_t fallback = 0) const;
};

// The replies in RESP bytes, read with hiredis's reader as a connection reads them, in order;
// an incomplete reply at the end is left out. For tests and the fuzzer: script_replies.h reads
// them.
// Errors: corrupt (a protocol error, with hiredis's reason).
Result<std::vector<Reply>> parse_resp(std::string_view bytes);

// A copy of what hiredis read (for connection.cc).
Reply copy_reply(const redisReply& r);

}  // namespace delayq::redis
