// Replies as values (see resp.h): copied out of hiredis's reply objects.
#include "redis/resp.h"

#include <hiredis.h>

#include <charconv>
#include <memory>

namespace delayq::redis {

Reply copy_reply(const redisReply& r) {
  Reply out;
  switch (r.type) {
    case REDIS_REPLY_INTEGER:
      out.type = Reply::Type::integer;
      out.integer = r.integer;
      break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      out.type = r.type == REDIS_REPLY_STRING   ? Reply::Type::string
                 : r.type == REDIS_REPLY_STATUS ? Reply::Type::status
                                                : Reply::Type::error;
      out.str.assign(r.str, r.len);
      break;
    case REDIS_REPLY_ARRAY:
      out.type = Reply::Type::array;
      out.elements.reserve(r.elements);
      for (size_t i = 0; i < r.elements; ++i) out.elements.push_back(copy_reply(*r.element[i]));
      break;
    default:
      out.type = Reply::Type::nil;
  }
  return out;
}

int64_t Reply::as_int(int64_t fallback) const {
  if (type == Type::integer) return integer;
  if (type != Type::string && type != Type::status) return fallback;
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(str.data(), str.data() + str.size(), v);
  return ec == std::errc() && p == str.data() + str.size() ? v : fallback;
}

Result<std::vector<Reply>> parse_resp(std::string_view bytes) {
  std::unique_ptr<redisReader, void (*)(redisReader*)> reader(redisReaderCreate(), redisReaderFree);
  if (!reader || redisReaderFeed(reader.get(), bytes.data(), bytes.size()) != REDIS_OK)
    return Status(Errc::io_error, "out of memory reading a redis reply");
  std::vector<Reply> out;
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader.get(), &raw) != REDIS_OK)
      return Status(Errc::corrupt, std::string("redis protocol error: ") + reader->errstr);
    if (raw == nullptr) return out;  // what is left, if anything, is an incomplete reply
    out.push_back(copy_reply(*static_cast<redisReply*>(raw)));
    freeReplyObject(raw);
  }
}

}  // namespace delayq::redis
