// delayqd at the edges of HTTP/1.1, end to end over real sockets: what a request's head may hold
// (its size counted over every line; one Host; one Authorization; no transfer coding but
// `chunked` alone), and HEAD answered wherever GET is. Each case is a request a client could
// send; docs/http-api.md ("Conventions") states these rules.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "daemon_process.h"
#include "http_client.h"

namespace {

using namespace std::chrono_literals;
using delayq::testing::HttpAnswer;
using delayq::testing::HttpClient;
using delayq::testing::RawConnection;

constexpr size_t kHeadLimit = 16 * 1024;

class HttpEdgesTest : public delayq::testing::StoreDaemonTest {
 protected:
  void SetUp() override {
    port_ = start();
    ASSERT_GT(port_, 0);
  }

  // The answer to `request` sent alone on a new connection.
  HttpAnswer ask(const std::string& request, bool to_head = false) {
    RawConnection c(port_);
    EXPECT_TRUE(c.send(request));
    return c.answer(30s, to_head);
  }

  // `request` on a new connection is answered `status` and `error`, its message holding one of
  // `says`, and the connection is closed.
  void expect_refused(const std::string& request, int status, const std::string& error,
                      std::initializer_list<const char*> says) {
    RawConnection c(port_);
    ASSERT_TRUE(c.send(request));
    HttpAnswer a = c.answer();
    EXPECT_EQ(a.status, status) << a.headers << "\n" << a.body;
    EXPECT_EQ(a.error(), error) << a.body;
    bool named = false;
    for (const char* part : says) named = named || a.message().find(part) != std::string::npos;
    EXPECT_TRUE(named) << a.body;
    EXPECT_TRUE(c.closed_within(30s));
  }

  int port_ = 0;
};

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A GET /health head of exactly `size` bytes (request line, header lines, blank line), made of
// many short header lines, as the reported request was.
std::string head_of_size(size_t size) {
  std::string head = "GET /health HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; size - head.size() - 2 > 100; ++i)
    head += "X-Pad-" + std::to_string(i) + ": " + std::string(40, 'a') + "\r\n";
  const size_t last = size - head.size() - 2;  // 11 to 100: "X-Last: " and its "\r\n" take 10
  head += "X-Last: " + std::string(last - 10, 'a') + "\r\n\r\n";
  return head;
}

// The reported bug: a head of many short header lines passed the documented 16 KiB limit (up
// to 24 KB was taken). The limit counts the whole head: 16384 bytes is served, one more is
// 431, however it is split into lines.
TEST_F(HttpEdgesTest, TheHeadLimitCountsEveryLineOfTheHead) {
  const std::string at = head_of_size(kHeadLimit);
  ASSERT_EQ(at.size(), kHeadLimit);
  EXPECT_EQ(ask(at).status, 200);
  for (const size_t size : {kHeadLimit + 1, size_t{20'000}, size_t{24'000}}) {
    SCOPED_TRACE(size);
    const std::string over = head_of_size(size);
    ASSERT_EQ(over.size(), size);
    expect_refused(over, 431, "too_large", {"16384 bytes"});
  }
  // One long line over the limit, as before.
  const std::string long_line =
      "GET /health HTTP/1.1\r\nHost: x\r\nX-Long: " + std::string(kHeadLimit, 'b') + "\r\n\r\n";
  EXPECT_EQ(ask(long_line).status, 431);
}

// RFC 9112, 3.2: an HTTP/1.1 request without Host, and any request with two, is refused with
// 400. (HTTP/1.0 did not require Host.)
TEST_F(HttpEdgesTest, AnHttp11RequestNeedsExactlyOneHost) {
  for (const char* request : {"GET /health HTTP/1.1\r\n\r\n",
                              "GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                              "GET /health HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n"}) {
    SCOPED_TRACE(request);
    expect_refused(request, 400, "bad_http", {"Host"});
  }
  EXPECT_EQ(ask("GET /health HTTP/1.1\r\nHost: a\r\n\r\n").status, 200);
  EXPECT_EQ(ask("GET /health HTTP/1.0\r\n\r\n").status, 200);
}

// The reported bug: "Transfer-Encoding: gzip, chunked" was read as plain JSON. Only `chunked`
// alone is understood; any other coding, or a list of them, is 501 and nothing is pushed.
// (Was seen to fail before the fix for the first three cases; the last two were 400 already.)
TEST_F(HttpEdgesTest, OnlyChunkedAloneIsAnUnderstoodTransferCoding) {
  const std::string body = R"({"topic":"t","id":"j"})";
  const auto chunked = [&](const std::string& codings) {
    char size[16];
    std::snprintf(size, sizeof size, "%zx", body.size());
    return "POST /push HTTP/1.1\r\nHost: x\r\n" + codings + "\r\n" + size + "\r\n" + body +
           "\r\n0\r\n\r\n";
  };
  for (const char* codings : {"Transfer-Encoding: gzip, chunked\r\n",
                              "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
                              "Transfer-Encoding: identity, chunked\r\n"}) {
    SCOPED_TRACE(codings);
    expect_refused(chunked(codings), 501, "not_supported", {"Transfer-Encoding"});
  }
  // Malformed rather than unknown: chunked twice, or beside a Content-Length (RFC 9112, 6.1,
  // 6.3): 400.
  for (const char* codings : {"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
                              "Transfer-Encoding: chunked\r\nContent-Length: 25\r\n"}) {
    SCOPED_TRACE(codings);
    expect_refused(chunked(codings), 400, "bad_http", {"Transfer-Encoding", "Content-Length"});
  }
  HttpClient client(port_);
  EXPECT_TRUE(has(client.post("/get", R"({"id":"j"})").body, "\"data\":null")) << "nothing pushed";
  HttpAnswer plain = ask(chunked("Transfer-Encoding: chunked\r\n"));
  EXPECT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(plain.data_string("id"), "j");
}

// The reported bug: with two Authorization headers the first one decided. Two are refused
// (400), with a token file or without, whichever of them is right.
TEST_F(HttpEdgesTest, TwoAuthorizationHeadersAreRefused) {
  const std::string file = dir_.sub("token");
  std::ofstream(file) << "s3cret\n";
  ::chmod(file.c_str(), 0600);
  daemon_.signal(SIGTERM);
  ASSERT_TRUE(daemon_.wait(30s));
  port_ = start({"--token-file", file});
  ASSERT_GT(port_, 0);
  for (const char* auths : {"Authorization: Bearer s3cret\r\nAuthorization: Bearer nope\r\n",
                            "Authorization: Bearer nope\r\nAuthorization: Bearer s3cret\r\n",
                            "Authorization: Bearer s3cret\r\nAuthorization: Bearer s3cret\r\n"}) {
    SCOPED_TRACE(auths);
    HttpAnswer a = ask(std::string("GET /stats HTTP/1.1\r\nHost: x\r\n") + auths + "\r\n");
    EXPECT_EQ(a.status, 400) << a.headers << "\n" << a.body;
    EXPECT_EQ(a.error(), "bad_http") << a.body;
    EXPECT_TRUE(has(a.message(), "Authorization")) << a.body;
  }
  EXPECT_EQ(ask("GET /stats HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\n\r\n").status,
            200);
}

// The reported bug: HEAD was refused (405) where GET is served. It is answered with the
// headers GET would send (Content-Length included) and no body; the connection goes on.
TEST_F(HttpEdgesTest, HeadIsAnsweredWhereGetIs) {
  for (const char* path : {"/health", "/stats", "/metrics", "/ui", "/ui/app.js"}) {
    SCOPED_TRACE(path);
    RawConnection c(port_);
    ASSERT_TRUE(c.send(std::string("GET ") + path + " HTTP/1.1\r\nHost: x\r\n\r\n"));
    HttpAnswer get = c.answer();
    ASSERT_EQ(get.status, 200);
    ASSERT_TRUE(c.send(std::string("HEAD ") + path + " HTTP/1.1\r\nHost: x\r\n\r\n"));
    HttpAnswer head = c.answer(30s, true);
    EXPECT_EQ(head.status, 200) << head.headers;
    EXPECT_TRUE(head.body.empty());
    const auto content_type = [](const std::string& h) {
      const size_t at = h.find("Content-Type: ");
      return at == std::string::npos ? std::string() : h.substr(at, h.find("\r\n", at) - at);
    };
    EXPECT_EQ(content_type(head.headers), content_type(get.headers));
    if (std::string(path) != "/stats" && std::string(path) != "/metrics")  // they change
      EXPECT_TRUE(has(head.headers, "Content-Length: " + std::to_string(get.body.size())))
          << head.headers;
    else
      EXPECT_TRUE(has(head.headers, "Content-Length: ")) << head.headers;
    // No body came after the head: the next answer on the connection is whole and in step.
    ASSERT_TRUE(c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
    HttpAnswer next = c.answer();
    EXPECT_EQ(next.status, 200) << next.headers;
    EXPECT_EQ(next.code(), 0) << next.body;
  }
  // A route without GET still refuses it, naming what it takes; the refusal has no body either.
  HttpAnswer refused = ask("HEAD /push HTTP/1.1\r\nHost: x\r\n\r\n", true);
  EXPECT_EQ(refused.status, 405) << refused.headers;
  EXPECT_TRUE(has(refused.headers, "Allow: POST")) << refused.headers;
  EXPECT_TRUE(refused.body.empty());
  EXPECT_EQ(ask("GET /push HTTP/1.1\r\nHost: x\r\n\r\n").status, 405);
  HttpAnswer health = ask("POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  EXPECT_TRUE(has(health.headers, "Allow: GET, HEAD")) << health.headers;
}

}  // namespace
