// AUTH on the Redis backend, against private redis-servers started with --requirepass and with an
// ACL user, on a unix socket and on loopback TCP: the right credentials work (every call, and the
// listener's wake-ups: the sweep is an hour, so only a wake message can end a waiting reserve),
// wrong or missing ones fail with invalid_argument naming AUTH, and no message shows a password.
// Also the url's credentials: parsing, percent-decoding and masking.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "delayq/redis.h"
#include "redis/connection.h"
#include "redis_server.h"

namespace delayq {
namespace {

using namespace std::chrono_literals;
using testing::RedisServer;

// Spaces, ':', '@', '/', '%' and '&': every character a url must percent-encode.
const std::string kPassword = "s3cr:t @/x%&y";
const std::string kPasswordInUrl = "s3cr%3At%20%40%2Fx%25%26y";

// A port nothing listens on now (the kernel's pick for a socket bound to port 0).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// A redis-server that wants kPassword, on its unix socket and on a loopback TCP port, with the
// ACL user "alice" (password "alice-pw") allowed every command, key and channel.
class AuthServer {
 public:
  AuthServer() {
    for (int attempt = 0; attempt < 5 && !started(); ++attempt) {
      port_ = free_port();
      server_ = std::make_unique<RedisServer>(std::vector<std::string>{
          "--requirepass", kPassword, "--port", std::to_string(port_), "--bind", "127.0.0.1"});
    }
    if (started()) acl_ = server_->command("ACL SETUSER alice on >alice-pw ~* &* +@all");
  }
  bool started() const { return server_ && server_->started(); }
  std::string why() const { return server_ ? server_->log() + acl_ : "no server"; }
  const RedisServer& server() const { return *server_; }
  std::string tcp(const std::string& userinfo) const {
    return "redis://" + userinfo + "127.0.0.1:" + std::to_string(port_);
  }

 private:
  int port_ = 0;
  std::unique_ptr<RedisServer> server_;
  std::string acl_;
};

RedisOptions options(std::string url, std::string user = "", std::string password = "") {
  RedisOptions o;
  o.url = std::move(url);
  o.user = std::move(user);
  o.password = std::move(password);
  static int queues = 0;  // a queue of its own for each: a failed run leaves no job to the next
  o.queue = "auth" + std::to_string(++queues);
  o.seed = 5;
  o.sweep = 1h;  // a waiting reserve ends on a wake message only
  return o;
}

// push, reserve, ack; and a reserve waiting on an empty topic woken by the next push, which only
// the listener's subscription (authenticated too) can do within the test's wait.
void works(const RedisOptions& o) {
  SCOPED_TRACE(redis::mask_url(o.url));
  Result<std::unique_ptr<Queue>> opened = open_redis(o);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  Queue& q = **opened;
  ASSERT_TRUE(q.push({.topic = "t", .id = "a", .body = "x"}).ok());
  Result<Delivery> d = q.reserve("t", 30s);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->body, "x");
  EXPECT_TRUE(q.ack(d->token).ok());
  std::promise<Result<Delivery>> got;
  std::thread waiter([&] { got.set_value(q.reserve("woken", 30s)); });
  std::this_thread::sleep_for(300ms);  // most likely waiting by now; correct either way
  const Status pushed = q.push({.topic = "woken", .id = "b"}).status();
  waiter.join();  // before any assertion returns: a failed run must not leave it running
  ASSERT_TRUE(pushed.ok()) << pushed.to_string();
  Result<Delivery> w = got.get_future().get();
  ASSERT_TRUE(w.ok()) << "the wake-up did not come: " << w.status().to_string();
  EXPECT_EQ(w->id, "b");
  EXPECT_TRUE(q.ack(w->token).ok());
}

// open_redis(o) fails with invalid_argument, a message naming AUTH and `also`, and none of the
// passwords.
void refused(const RedisOptions& o, const std::string& also) {
  Result<std::unique_ptr<Queue>> q = open_redis(o);
  ASSERT_FALSE(q.ok());
  const std::string m = q.status().message();
  EXPECT_TRUE(q.is(Errc::invalid_argument)) << q.status().to_string();
  EXPECT_NE(m.find("AUTH"), std::string::npos) << m;
  EXPECT_NE(m.find(also), std::string::npos) << m;
  for (const std::string& secret : {kPassword, kPasswordInUrl, std::string("wrong-pw"),
                                    std::string("alice-pw")})
    EXPECT_EQ(m.find(secret), std::string::npos) << "the message shows a password: " << m;
}

TEST(RedisAuth, TheRightPasswordWorksOnTheSocketAndOverTcp) {
  AuthServer s;
  ASSERT_TRUE(s.started()) << s.why();
  works(options(s.server().url(), "", kPassword));
  works(options(s.server().url() + "?password=" + kPasswordInUrl));
  works(options(s.tcp(":" + kPasswordInUrl + "@")));
  works(options(s.tcp(""), "", kPassword));
}

TEST(RedisAuth, AnAclUserWorksFromTheUrlOrTheOptions) {
  AuthServer s;
  ASSERT_TRUE(s.started()) << s.why();
  works(options(s.tcp("alice:alice-pw@")));
  works(options(s.server().url() + "?user=alice&password=alice-pw"));
  works(options(s.server().url(), "alice", "alice-pw"));
}

TEST(RedisAuth, WrongOrMissingCredentialsAreRefusedNamingAuth) {
  AuthServer s;
  ASSERT_TRUE(s.started()) << s.why();
  refused(options(s.server().url(), "", "wrong-pw"), "WRONGPASS");
  refused(options(s.tcp(":wrong-pw@")), "WRONGPASS");
  refused(options(s.tcp("alice:" + kPasswordInUrl + "@")), "as user 'alice'");
  refused(options(s.tcp("bob:alice-pw@")), "as user 'bob'");
  refused(options(s.server().url()), "NOAUTH");
  refused(options(s.tcp("")), "NOAUTH");
  // A server without a password refuses one given all the same.
  RedisServer open_server;
  ASSERT_TRUE(open_server.started()) << open_server.log();
  refused(options(open_server.url(), "", "wrong-pw"), "refused AUTH");
}

// Every message about a url shows it with the password masked, also for urls that fail to parse.
TEST(RedisAuth, UrlsCarryPercentDecodedCredentialsAndAreShownMasked) {
  Result<redis::Endpoint> ep = redis::parse_url("redis://us%65r:" + kPasswordInUrl + "@h:7000/0");
  ASSERT_TRUE(ep.ok()) << ep.status().to_string();
  EXPECT_EQ(ep->user, "user");
  EXPECT_EQ(ep->password, kPassword);
  EXPECT_EQ(ep->host, "h");
  EXPECT_EQ(ep->port, 7000);
  EXPECT_EQ(ep->url, "redis://us%65r:***@h:7000/0");
  ep = redis::parse_url("redis://:pw@h");
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(ep->user, "");
  EXPECT_EQ(ep->password, "pw");
  EXPECT_EQ(ep->url, "redis://:***@h");
  ep = redis::parse_url("unix:///run/r.sock?user=al%69ce&password=" + kPasswordInUrl);
  ASSERT_TRUE(ep.ok()) << ep.status().to_string();
  EXPECT_EQ(ep->unix_path, "/run/r.sock");
  EXPECT_EQ(ep->user, "alice");
  EXPECT_EQ(ep->password, kPassword);
  EXPECT_EQ(ep->url, "unix:///run/r.sock?user=al%69ce&password=***");

  for (const std::string bad :
       {"redis://:se%zzret@h", "redis://:secret@h:99999", "redis://:sec/ret@h/1",
        "redis://u:secret@", "unix:///s?password=se%2cret&db=1", "unix:///s?password=secret&password=secret",
        "unix:///s?password=se%Gret", "rediss://:secret@h", "redis://:sec?ret@h:x"}) {
    Result<redis::Endpoint> r = redis::parse_url(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(r.is(Errc::invalid_argument));
    EXPECT_EQ(r.status().message().find("secret"), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find("se%"), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find("ret@"), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(redis::mask_url("redis://h:1"), "redis://h:1");
  EXPECT_EQ(redis::mask_url("redis://alice@h:1"), "redis://alice@h:1");
  EXPECT_EQ(redis::mask_url("unix:///run/a:b@c.sock"), "unix:///run/a:b@c.sock");
  EXPECT_EQ(redis::mask_url("unix:///run/a:b@c.sock?password=x"), "unix:///run/a:b@c.sock?password=***");

  // The password in one place only, and a user needs one.
  RedisOptions o = options("redis://:pw@127.0.0.1:1", "", "pw");
  Result<std::unique_ptr<Queue>> q = open_redis(o);
  EXPECT_TRUE(q.is(Errc::invalid_argument));
  EXPECT_NE(q.status().message().find("password is given twice"), std::string::npos)
      << q.status().message();
  q = open_redis(options("redis://127.0.0.1:1", "alice"));
  EXPECT_TRUE(q.is(Errc::invalid_argument));
  EXPECT_NE(q.status().message().find("user 'alice' has no password"), std::string::npos)
      << q.status().message();
}

}  // namespace
}  // namespace delayq
