// delayqd's connections, end to end: the real daemon on a loopback port, and clients that
// misbehave on purpose over real sockets. What a client can make the server hold before it has
// proven anything (a body before the token is checked, a trickle of header bytes, one address
// holding every connection); that an exception ends one connection and not the daemon; that
// running out of file descriptors pauses accepting only; and that a pop whose client left
// neither keeps its place nor spends a job's attempt.
// Waits are generous and bounded; nothing asserts how fast anything happened.
#include <sys/resource.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon_process.h"
#include "http_client.h"

namespace {

using namespace std::chrono_literals;
using delayq::testing::HttpAnswer;
using delayq::testing::HttpClient;
using delayq::testing::RawConnection;

constexpr const char* kToken = "s3cret-token";

class DelayqdConnectionTest : public delayq::testing::StoreDaemonTest {
 protected:
  std::vector<std::string> token_flag() {
    const std::string file = dir_.sub("token");
    std::ofstream(file) << kToken << "\n";
    ::chmod(file.c_str(), 0600);
    return {"--token-file", file};
  }

  // A value of /metrics ("name{labels} value"), -1 if the series is absent.
  static long metric(HttpClient& c, const std::string& series) {
    const std::string text = c.get("/metrics").body;
    const size_t at = text.find("\n" + series + " ");
    return at == std::string::npos ? -1 : std::atol(text.c_str() + at + series.size() + 2);
  }
  // Polls `pred` every 50 ms for up to 30 s.
  template <class Pred>
  static bool eventually(Pred pred) {
    for (int i = 0; i < 600; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(50ms);
    }
    return pred();
  }
};

std::string headers(const std::string& request_line, size_t content_length,
                    const std::string& extra = "") {
  return request_line + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(content_length) + "\r\n" + extra + "\r\n";
}

// 401, 404, 405 and 413 are decided by the headers: they come before the body is sent (the
// client waits for them with its body unsent), never after a "100 Continue", and the server
// then ends the connection instead of waiting for the body.
TEST_F(DelayqdConnectionTest, RefusalsComeWithTheHeadersBeforeAnyBody) {
  const int port = start(token_flag());
  ASSERT_GT(port, 0);
  const std::string bearer = std::string("Authorization: Bearer ") + kToken + "\r\n";
  struct Case {
    std::string name, head;
    int status;
    std::string error, says;
  };
  const std::vector<Case> cases = {
      {"no token", headers("POST /push", 4 << 20), 401, "unauthorized", "Bearer <token>"},
      {"no Bearer prefix, 100-continue",
       headers("POST /push", 4 << 20,
               std::string("Authorization: ") + kToken + "\r\nExpect: 100-continue\r\n"),
       401, "unauthorized", "\"Bearer \" prefix"},
      {"wrong token", headers("POST /push", 4 << 20, "Authorization: Bearer nope\r\n"), 401,
       "unauthorized", "wrong"},
      {"no such route", headers("POST /nowhere", 4 << 20, bearer), 404, "no_route", "/nowhere"},
      {"wrong method", headers("PUT /push", 4 << 20, bearer + "Expect: 100-continue\r\n"), 405,
       "method_not_allowed", "POST"},
      {"too large", headers("POST /push", (4 << 20) + 1, bearer + "Expect: 100-continue\r\n"), 413,
       "too_large", "--max-body-bytes"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    RawConnection c(port);
    ASSERT_TRUE(c.send(k.head));
    HttpAnswer a = c.answer();
    EXPECT_EQ(a.status, k.status) << a.headers << "\n" << a.body;
    EXPECT_EQ(a.error(), k.error) << a.body;
    EXPECT_NE(a.message().find(k.says), std::string::npos) << a.body;
    EXPECT_TRUE(c.closed_within(30s)) << "the server waits for a body it will not use";
  }
  // Without a body the same checks answer, on a connection that stays open.
  HttpClient plain(port);
  RawConnection get(port);
  ASSERT_TRUE(get.send("GET /stats HTTP/1.1\r\nHost: x\r\nAuthorization: " + std::string(kToken) +
                       "\r\n\r\n"));
  HttpAnswer bare = get.answer();
  EXPECT_EQ(bare.status, 401);
  EXPECT_NE(bare.message().find("\"Bearer \" prefix"), std::string::npos) << bare.body;
  // A request that passes gets its "100 Continue", then its answer.
  RawConnection ok(port);
  const std::string body = R"({"topic":"t"})";
  ASSERT_TRUE(ok.send(headers("POST /push", body.size(), bearer + "Expect: 100-continue\r\n")));
  EXPECT_EQ(ok.answer().status, 100);
  ASSERT_TRUE(ok.send(body));
  EXPECT_EQ(ok.answer().status, 200);
  EXPECT_EQ(plain.get("/health").status, 200);
}

// Sixteen unauthenticated 4 MiB bodies, each but its last byte sent: the server does not keep
// them (it answered 401 on the headers and closed), so its memory does not grow by 64 MiB.
TEST_F(DelayqdConnectionTest, UnauthenticatedBodiesAreNotHeldInMemory) {
  const int port = start(token_flag());
  ASSERT_GT(port, 0);
  const long before_kb = daemon_.status_value("VmRSS");
  ASSERT_GT(before_kb, 0);
  const size_t size = size_t{4} << 20;
  const std::string body(size - 1, 'x');
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 16; ++i) {
    held.push_back(std::make_unique<RawConnection>(port));
    ASSERT_TRUE(held.back()->send(headers("POST /push", size)));
    (void)held.back()->send(body);  // refused part-way once the server has closed
  }
  std::this_thread::sleep_for(1s);  // what the server would read, it has read by now
  const long grown_kb = daemon_.status_value("VmRSS") - before_kb;
  EXPECT_LT(grown_kb, 16 * 1024) << "the daemon grew by " << grown_kb << " kB";
  for (auto& c : held) EXPECT_TRUE(c->closed_within(30s));
  EXPECT_FALSE(daemon_.exited());
}

// Headers and bodies trickled a byte at a time (faster than any timeout, so a timer reset by
// each read would never fire) are cut off by their total deadlines; a silent connection by the
// idle one.
TEST_F(DelayqdConnectionTest, SlowHeadersAndBodiesAreCutOffByTotalDeadlines) {
  const int port = start({"--header-timeout", "2", "--body-timeout", "2", "--idle-timeout", "3"});
  ASSERT_GT(port, 0);
  const auto trickle = [](RawConnection& c, const std::string& bytes) {
    size_t sent = 0;
    for (char b : bytes) {
      if (!c.send(std::string(1, b)) || c.closed_within(300ms)) break;
      ++sent;
    }
    return sent;
  };
  const std::string head =
      "POST /push HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: a-very-slow-client/1.0\r\n"
      "Content-Type: application/json\r\nContent-Length: 14\r\n\r\n";
  RawConnection slow_head(port);
  EXPECT_LT(trickle(slow_head, head), head.size()) << "the headers were let through";

  const std::string body = R"({"topic":"slow"})" + std::string(90, ' ');
  RawConnection slow_body(port);
  ASSERT_TRUE(slow_body.send(headers("POST /push", body.size())));
  EXPECT_LT(trickle(slow_body, body), body.size()) << "the body was let through";

  RawConnection silent(port);
  EXPECT_TRUE(silent.closed_within(30s));
  HttpClient c(port);
  EXPECT_EQ(c.get("/health").status, 200);
}

// With --max-connections-per-client 2, a third connection from 127.0.0.1 is told why and
// closed, while another address (127.0.0.2) is still served, and 127.0.0.1 is again once one
// of its connections has closed.
TEST_F(DelayqdConnectionTest, ConnectionsAreCappedPerClientAddress) {
  const int port = start({"--max-connections-per-client", "2"});
  ASSERT_GT(port, 0);
  const std::string health = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  std::vector<std::unique_ptr<RawConnection>> mine;
  for (int i = 0; i < 2; ++i) {
    mine.push_back(std::make_unique<RawConnection>(port));
    ASSERT_TRUE(mine.back()->send(health));
    ASSERT_EQ(mine.back()->answer().status, 200);
  }
  RawConnection third(port);
  ASSERT_TRUE(third.connected());
  (void)third.send(health);
  HttpAnswer over = third.answer();
  EXPECT_EQ(over.status, 503) << over.headers;
  EXPECT_EQ(over.error(), "overloaded");
  EXPECT_NE(over.message().find("127.0.0.1"), std::string::npos) << over.body;
  EXPECT_NE(over.message().find("--max-connections-per-client"), std::string::npos) << over.body;
  EXPECT_TRUE(third.closed_within(30s));

  RawConnection other(port, "127.0.0.2");
  ASSERT_TRUE(other.connected());
  ASSERT_TRUE(other.send(health));
  EXPECT_EQ(other.answer().status, 200);

  mine.front()->close();
  EXPECT_TRUE(eventually([&] {
    RawConnection again(port);
    return again.send(health) && again.answer().status == 200;
  }));
}

// A request whose body cannot be allocated (Content-Length 1e9 under a 256 MiB data limit)
// makes Beast throw std::bad_alloc inside the server: that connection ends, the daemon goes on.
TEST_F(DelayqdConnectionTest, AnExceptionEndsOneConnectionNotTheDaemon) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's shadow memory does not fit under a data limit";
#else
  daemon_.limit(RLIMIT_DATA, uint64_t{256} << 20);
  const int port = start({"--max-body-bytes", "1073741824"});
  ASSERT_GT(port, 0);
  RawConnection c(port);
  ASSERT_TRUE(c.send(headers("POST /push", 1'000'000'000) + "{\"topic\":"));
  EXPECT_TRUE(c.closed_within(30s));
  EXPECT_TRUE(eventually([&] { return daemon_.log().find("bad_alloc") != std::string::npos; }))
      << daemon_.log();
  EXPECT_FALSE(daemon_.exited()) << daemon_.log();
  HttpClient after(port);
  EXPECT_EQ(after.get("/health").status, 200);
  EXPECT_EQ(after.post("/push", R"({"topic":"still"})").code(), 0);
#endif
}

// Out of file descriptors (the daemon's limit lowered to just above what it uses), accept()
// fails with EMFILE: the connections already open are still served meanwhile (on a single
// server thread), and new ones are accepted again once descriptors are free.
TEST_F(DelayqdConnectionTest, RunningOutOfFileDescriptorsPausesAcceptingOnly) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // UBSan's type checks probe memory through a pipe: with no descriptor left they report a
  // false "invalid vptr" (seen in Boost.System's error_category) and stop the daemon.
  GTEST_SKIP() << "a sanitizer's runtime needs file descriptors of its own";
#endif
  const int port = start({"--threads", "1"});
  ASSERT_GT(port, 0);
  HttpClient served(port);
  ASSERT_EQ(served.get("/health").status, 200);
  const rlimit tight{daemon_.open_files() + 2, daemon_.open_files() + 2};
  ASSERT_EQ(::prlimit(daemon_.pid(), RLIMIT_NOFILE, &tight, nullptr), 0);
  std::vector<std::unique_ptr<RawConnection>> flood;
  for (int i = 0; i < 8; ++i) flood.push_back(std::make_unique<RawConnection>(port));
  EXPECT_TRUE(eventually([&] {
    return daemon_.log().find("cannot accept connections") != std::string::npos;
  })) << daemon_.log();
  for (int i = 0; i < 20; ++i) ASSERT_EQ(served.get("/health").status, 200) << i;
  flood.clear();  // their closing frees descriptors, under the same limit
  EXPECT_TRUE(eventually([&] {
    HttpClient fresh(port);
    return fresh.get("/health").status == 200;
  }));
  EXPECT_FALSE(daemon_.exited());
}

// A pop whose client closed its connection while waiting is withdrawn: a job that comes later
// goes to the next client as its first attempt, even with max_attempts 1.
TEST_F(DelayqdConnectionTest, APopWhoseClientLeftIsWithdrawn) {
  const int port = start();
  ASSERT_GT(port, 0);
  HttpClient c(port);
  const std::string pop = R"({"topic":"left","timeout":60})";
  {
    RawConnection leaving(port);
    ASSERT_TRUE(leaving.send(headers("POST /pop", pop.size()) + pop));
    ASSERT_TRUE(eventually([&] { return metric(c, "delayqd_waiting_pops") == 1; }));
  }  // closed while it waits
  EXPECT_TRUE(eventually([&] { return metric(c, "delayqd_waiting_pops") == 0; }))
      << "the pop of a client that left still waits";
  // Counted as the withdrawn pop's answer, just after it stops waiting.
  EXPECT_TRUE(eventually([&] {
    return metric(c, "delayqd_http_requests_total{route=\"pop\",status=\"499\"}") == 1;
  }));
  ASSERT_EQ(c.post("/push", R"({"topic":"left","id":"j","ttr":60,
                               "retry":{"kind":"fixed","delay":0,"max_attempts":1}})")
                .code(),
            0);
  HttpAnswer got = c.post("/pop", R"({"topic":"left","timeout":20})");
  ASSERT_TRUE(got.data().is_object()) << got.body;
  EXPECT_EQ(got.data_string("id"), "j");
  EXPECT_EQ(got.data().find("attempt")->as_int(), 1);
  EXPECT_EQ(c.post("/finish", R"({"id":"j"})").code(), 0);
  HttpAnswer stats = c.get("/stats");
  EXPECT_EQ(stats.data().find("dead_lettered")->as_int(), 0) << stats.body;
  EXPECT_EQ(stats.data().find("delivered")->as_int(), 1) << stats.body;
}

// The race: the job is ready when the client's pop arrives, and the client has already closed
// its connection (it sent the pop and closed at once; in one round it only half-closes). The
// pop is withdrawn before it takes the job, or the delivery, which cannot be written, is given
// back uncounted: either way the next client gets the job as its first attempt. A half-closed
// client can still read, though: when the server answers the pop before it reads the end of
// the client's stream, the delivery is written, and that client holds the job (then finishes
// it, as a client would). A client that closes can lose the race too: its thread may be
// descheduled between its send and its close, and the server, finding the connection open,
// writes the answer into a socket nobody will read (no queue can tell that from a client that
// read it): the job then stays reserved until its lease runs out. A give-back comes within
// milliseconds of the answer (Session::write), so a job still reserved 2 s after its pop was
// answered counts as written; at least one round of the three must take the give-back path.
TEST_F(DelayqdConnectionTest, ADeliveryThatCannotBeWrittenIsGivenBackUncounted) {
  const int port = start();
  ASSERT_GT(port, 0);
  HttpClient c(port);
  const std::string pop = R"({"topic":"race","timeout":60})";
  long written = 0;  // deliveries written (to the half-closed client, or before a close)
  // Pops answered with a job so far (the test's own pops included).
  const std::string answered_series = R"(delayqd_http_requests_total{route="pop",status="200"})";
  long answered = std::max(0L, metric(c, answered_series));
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    const std::string id = "r" + std::to_string(round);
    ASSERT_EQ(c.post("/push", R"({"topic":"race","id":")" + id + R"(","ttr":600,
                                 "retry":{"kind":"fixed","delay":0,"max_attempts":1}})")
                  .code(),
              0);
    RawConnection gone(port);
    ASSERT_TRUE(gone.send(headers("POST /pop", pop.size()) + pop));
    if (round == 1)
      gone.shutdown_write();  // "I send no more": as good as gone for a pop
    else
      gone.close();  // before any answer could come
    // Given back (or never taken): ready again with no attempt counted; or, half-closed, written.
    bool delivered = false, written_unread = false;
    std::optional<std::chrono::steady_clock::time_point> reserved_since;
    EXPECT_TRUE(eventually([&] {
      HttpAnswer j = c.post("/get", R"({"id":")" + id + R"("})");
      if (j.data_string("state") == "ready" && j.data().find("attempts")->as_int() == 0)
        return true;
      if (j.data_string("state") != "reserved") return false;
      if (round == 1) {
        delivered = gone.answer(std::chrono::seconds(5)).data_string("id") == id;
        return delivered;
      }
      if (metric(c, answered_series) <= answered) return false;
      const auto now = std::chrono::steady_clock::now();
      if (!reserved_since) reserved_since = now;
      written_unread = now - *reserved_since > std::chrono::seconds(2);
      return written_unread;
    })) << c.post("/get", R"({"id":")" + id + R"("})").body;
    if (delivered || written_unread) {
      ++written;
      answered += 1;
      EXPECT_EQ(c.post(delivered ? "/finish" : "/delete", R"({"id":")" + id + R"("})").code(), 0);
      continue;
    }
    HttpAnswer got = c.post("/pop", R"({"topic":"race","timeout":20})");
    ASSERT_EQ(got.data_string("id"), id) << got.body;
    EXPECT_EQ(got.data().find("attempt")->as_int(), 1);
    EXPECT_EQ(c.post("/finish", R"({"id":")" + id + R"("})").code(), 0);
    answered = std::max(answered, metric(c, answered_series));
  }
  HttpAnswer stats = c.get("/stats");
  EXPECT_EQ(stats.data().find("dead_lettered")->as_int(), 0) << stats.body;
  // Which way each came back is a race: withdrawn (a 499) or given back (released).
  const long withdrawn = metric(c, "delayqd_http_requests_total{route=\"pop\",status=\"499\"}");
  const long released = metric(c, "delayq_released_total");
  EXPECT_EQ(stats.data().find("released")->as_int(), released);
  EXPECT_EQ(std::max(withdrawn, 0L) + released + written, 3)
      << withdrawn << " withdrawn, " << released << " released, " << written << " written";
  EXPECT_GE(std::max(withdrawn, 0L) + released, 1) << "no round took the give-back path";
}

}  // namespace
