// An HTTP/1.1 answer read off a connection's bytes: the status line and headers, then a body
// framed by Content-Length, by chunks, or by the end of the connection. What delayqd's clients
// share (wire/http_client.h, and the tests' raw connections that misbehave on purpose); no
// sockets here.
#pragma once

#include <string>

namespace delayq::wire {

struct HttpReply {
  int status = 0;
  std::string headers;  // the status line and the header lines, without the blank line
  std::string body;     // de-chunked
  bool close = false;   // "Connection: close": the server ends the connection after it
};

enum class ReplyParse {
  incomplete,  // more bytes are needed
  done,        // `out` holds the answer; its bytes are gone from `pending`
  not_http,    // the bytes are not an HTTP/1.x answer (or a malformed chunked body)
  cut,         // the connection ended (`eof`) in the middle of the answer
};

// Takes one answer off the front of `pending`, the bytes read so far; `eof` says that no more
// will come. An interim answer ("100 Continue") is an answer of its own, with no body, as are
// 204 and 304, and any answer to a HEAD request (`to_head`), whatever its Content-Length says.
// With `eof` and nothing pending the result is `cut`.
ReplyParse take_reply(std::string& pending, bool eof, HttpReply& out, bool to_head = false);

}  // namespace delayq::wire
