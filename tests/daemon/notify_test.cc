// delayqd under a service manager that speaks systemd's readiness protocol: with NOTIFY_SOCKET
// set, "READY=1" arrives on that datagram socket only once /health answers (so that a unit
// with Type=notify is "started" when it can be used), and "STOPPING=1" when SIGTERM begins the
// drain. The socket may be a path or an abstract name ("@..."); a bad NOTIFY_SOCKET is a
// warning, and the daemon serves anyway.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>

#include "background_daemon.h"
#include "http_client.h"
#include "temp_dir.h"

namespace delayq::testing {
namespace {

using namespace std::chrono_literals;

// The service manager's end: a unix datagram socket bound to `name` (a path, or "@name").
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& name) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, name.data(), name.size());
    if (name[0] == '@') a.sun_path[0] = '\0';
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
    bound_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) == 0;
  }
  ~NotifySocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool bound() const { return bound_; }
  // The next datagram, or "" when none comes within `timeout`.
  std::string next(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return "";
    char buf[512];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

 private:
  int fd_ = -1;
  bool bound_ = false;
};

// delayqd on `port` with NOTIFY_SOCKET=`notify` (nothing else of the test's environment), its
// stdout and stderr in dir/log.
BackgroundDaemon start(const TempDir& dir, int port, const std::string& notify) {
  return BackgroundDaemon(DELAYQD_PATH,
                          {"--listen", "127.0.0.1:" + std::to_string(port), "--store",
                           dir.sub("store"), "--sync", "none"},
                          {"NOTIFY_SOCKET=" + notify}, dir.sub("log"));
}

// READY=1 comes once; at that moment /health answers 200 at the first try (the test's client
// makes one connection and does not retry). SIGTERM sends STOPPING=1 and the daemon exits 0.
void ready_then_stopping(const TempDir& dir, const std::string& name) {
  NotifySocket manager(name);
  ASSERT_TRUE(manager.bound()) << name << ": " << std::strerror(errno);
  const int port = free_port();
  ASSERT_GT(port, 0);
  BackgroundDaemon d = start(dir, port, name);
  const std::string ready = manager.next(60s);
  ASSERT_EQ(ready, "READY=1") << d.log();
  HttpClient client(port);
  const HttpAnswer health = client.get("/health");
  EXPECT_EQ(health.status, 200) << health.body << "\n" << d.log();
  EXPECT_EQ(health.data_string("status"), "ok");
  EXPECT_EQ(manager.next(200ms), "") << "only one READY=1";
  client.disconnect();
  d.terminate();
  EXPECT_EQ(manager.next(60s), "STOPPING=1") << d.log();
  EXPECT_EQ(d.wait(), 0) << d.log();
  EXPECT_EQ(d.log().find("warning"), std::string::npos) << d.log();
}

TEST(DelayqdNotifyTest, ReadyOnAPathSocketOnceHealthAnswersAndStoppingOnSigterm) {
  TempDir dir("delayqd-notify");
  ASSERT_FALSE(dir.path().empty());
  ready_then_stopping(dir, dir.sub("notify.sock"));
}

TEST(DelayqdNotifyTest, ReadyOnAnAbstractSocket) {
  TempDir dir("delayqd-notify");
  ASSERT_FALSE(dir.path().empty());
  ready_then_stopping(dir, "@delayqd-notify-test-" + std::to_string(::getpid()));
}

// A NOTIFY_SOCKET that cannot be used (no such socket; a relative name) is named in a warning,
// and the daemon serves all the same.
TEST(DelayqdNotifyTest, AnUnusableNotifySocketIsAWarningNotAFailure) {
  for (const std::string& name : {std::string("/nonexistent-dir/notify.sock"),
                                 std::string("relative.sock")}) {
    TempDir dir("delayqd-notify");
    ASSERT_FALSE(dir.path().empty());
    const int port = free_port();
    ASSERT_GT(port, 0);
    BackgroundDaemon d = start(dir, port, name);
    HttpAnswer health;
    for (auto until = std::chrono::steady_clock::now() + 60s;
         health.status != 200 && std::chrono::steady_clock::now() < until;
         std::this_thread::sleep_for(20ms)) {
      HttpClient client(port);
      health = client.get("/health");
    }
    EXPECT_EQ(health.status, 200) << d.log();
    d.terminate();
    EXPECT_EQ(d.wait(), 0) << d.log();
    const std::string log = d.log();
    EXPECT_NE(log.find("Z warn "), std::string::npos) << log;  // a log line, level warn
    EXPECT_NE(log.find("NOTIFY_SOCKET"), std::string::npos) << log;
    EXPECT_NE(log.find(name), std::string::npos) << log;
  }
}

}  // namespace
}  // namespace delayq::testing
