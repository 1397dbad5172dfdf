// Reading an HTTP/1.1 answer from bytes (see http_reply.h).
#include "wire/http_reply.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <string_view>

namespace delayq::wire {

namespace {

constexpr size_t kNone = std::string::npos;

bool equals_lower(std::string_view text, std::string_view lower) {
  if (text.size() != lower.size()) return false;
  for (size_t i = 0; i < text.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) != lower[i]) return false;
  return true;
}

bool contains_lower(std::string_view text, std::string_view lower) {
  for (size_t i = 0; i + lower.size() <= text.size(); ++i)
    if (equals_lower(text.substr(i, lower.size()), lower)) return true;
  return false;
}

// What the headers say about the body.
struct Framing {
  size_t length = kNone;  // Content-Length
  bool chunked = false;
  bool close = false;
};

Framing framing_of(std::string_view headers) {
  Framing f;
  for (size_t at = headers.find("\r\n"); at != kNone;) {
    const size_t next = headers.find("\r\n", at + 2);
    const std::string_view line = headers.substr(at + 2, next == kNone ? kNone : next - at - 2);
    at = next;
    const size_t colon = line.find(':');
    if (colon == kNone) continue;
    const std::string_view name = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (equals_lower(name, "content-length"))
      f.length = std::strtoull(std::string(value).c_str(), nullptr, 10);
    else if (equals_lower(name, "transfer-encoding"))
      f.chunked = contains_lower(value, "chunked");
    else if (equals_lower(name, "connection"))
      f.close = contains_lower(value, "close");
  }
  return f;
}

// A "Transfer-Encoding: chunked" body at the start of `in`: its length in `in` once the last
// chunk has come, nullopt while incomplete; `malformed` set when it cannot be one.
std::optional<size_t> dechunk(std::string_view in, std::string& out, bool& malformed) {
  size_t pos = 0;
  for (;;) {
    const size_t eol = in.find("\r\n", pos);
    if (eol == kNone) return std::nullopt;
    size_t size = 0;
    const std::string_view line = in.substr(pos, eol - pos);
    const auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
    if (ec != std::errc() || p == line.data()) {
      malformed = true;
      return std::nullopt;
    }
    pos = eol + 2;
    if (size == 0) return in.size() < pos + 2 ? std::nullopt : std::optional<size_t>(pos + 2);
    if (in.size() < pos + size + 2) return std::nullopt;
    out.append(in.substr(pos, size));
    pos += size + 2;
  }
}

bool has_no_body(int status) {
  return status < 200 || status == 204 || status == 304;
}

// The body at the start of `rest` as `f` frames it, and how many bytes of `rest` it takes.
ReplyParse take_body(std::string_view rest, const Framing& f, bool eof, std::string& body,
                     size_t& used) {
  if (f.chunked) {
    bool malformed = false;
    const std::optional<size_t> n = dechunk(rest, body, malformed);
    if (malformed) return ReplyParse::not_http;
    if (!n) return eof ? ReplyParse::cut : ReplyParse::incomplete;
    used = *n;
  } else if (f.length != kNone) {
    if (rest.size() < f.length) return eof ? ReplyParse::cut : ReplyParse::incomplete;
    used = f.length;
    body.assign(rest.substr(0, used));
  } else {
    if (!eof) return ReplyParse::incomplete;  // the body ends with the connection
    used = rest.size();
    body.assign(rest);
  }
  return ReplyParse::done;
}

}  // namespace

ReplyParse take_reply(std::string& pending, bool eof, HttpReply& out, bool to_head) {
  const size_t head_end = pending.find("\r\n\r\n");
  if (head_end == kNone) {
    if (!eof) return ReplyParse::incomplete;
    return pending.empty() ? ReplyParse::cut : ReplyParse::not_http;
  }
  if (pending.compare(0, 7, "HTTP/1.") != 0 || head_end < 12) return ReplyParse::not_http;
  const std::string_view all(pending);
  const std::string_view headers = all.substr(0, head_end);
  const Framing f = framing_of(headers);
  const int status = std::atoi(pending.c_str() + 9);
  const std::string_view rest = all.substr(head_end + 4);
  std::string body;
  size_t used = 0;  // bytes of `rest` that belong to this answer
  if (!to_head && !has_no_body(status)) {
    const ReplyParse r = take_body(rest, f, eof, body, used);
    if (r != ReplyParse::done) return r;
  }
  out.status = status;
  out.headers.assign(headers);
  out.body = std::move(body);
  out.close = f.close;
  pending.erase(0, head_end + 4 + used);
  return ReplyParse::done;
}

}  // namespace delayq::wire
