// What a new user meets first (issue 21): the version of both programs, in /health and
// /metrics; "did you mean" for a mistyped flag or setting; answers that end with a newline; the
// CLI's target from the environment. Each runs the real binaries of this build.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "delayq/redis.h"
#include "http_client.h"
#include "redis_server.h"

namespace {

using namespace delayq::testing;

CliRun delayqd(const std::vector<std::string>& args) {
  return run_program(DELAYQD_PATH, args);
}

// "delayqd 1.2.3\n": the version, checked for its form.
std::string version_of(const CliRun& r, const std::string& program) {
  std::smatch m;
  const std::regex form(program + R"( ([0-9]+\.[0-9]+\.[0-9]+)\n)");
  EXPECT_TRUE(std::regex_match(r.out, m, form)) << describe(r);
  return m.size() == 2 ? m[1].str() : "";
}

// --version prints the program's name and version and exits 0, and the daemon shows the same
// version in /health and as a delayq_build_info gauge in /metrics.
TEST(FirstContact, VersionEverywhere) {
  const CliRun d = delayqd({"--version"});
  EXPECT_EQ(d.exit, 0) << describe(d);
  const std::string version = version_of(d, "delayqd");
  ASSERT_FALSE(version.empty());
  const CliRun c = cli({"--version"});
  EXPECT_EQ(c.exit, 0) << describe(c);
  EXPECT_EQ(version_of(c, "delayq"), version);
  EXPECT_TRUE(c.err.empty()) << c.err;

  TempDir dir;
  DaemonProcess daemon(DELAYQD_PATH, dir.sub("d.log"));
  const int port = daemon.start({"--listen", "127.0.0.1:0", "--store", dir.sub("s")});
  ASSERT_GT(port, 0);
  HttpClient http(port);
  const HttpAnswer health = http.get("/health");
  EXPECT_EQ(health.status, 200) << health.body;
  EXPECT_EQ(health.data_string("version"), version) << health.body;
  const HttpAnswer metrics = http.get("/metrics");
  EXPECT_TRUE(contains(metrics.body, "\n# TYPE delayq_build_info gauge\n")) << metrics.body;
  EXPECT_TRUE(contains(metrics.body, "\ndelayq_build_info{version=\"" + version + "\"} 1\n"))
      << metrics.body;
}

// A mistyped flag (or config setting) is refused naming the one that was meant; a flag that is
// no typo of a known one gets no guess.
TEST(FirstContact, DidYouMean) {
  TempDir dir;
  CliRun r = delayqd({"--tokn-file", "x"});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "unknown flag --tokn-file (did you mean --token-file?)")) << r.err;
  r = delayqd({"--verison"});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "unknown flag --verison (did you mean --version?)")) << r.err;
  r = delayqd({"--colour", "blue"});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "unknown flag --colour\n")) << r.err;
  const std::string conf = dir.sub("d.conf");
  std::ofstream(conf) << "thraeds = 2\n";
  r = delayqd({"--config", conf});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, conf + ":1: unknown setting 'thraeds' (did you mean 'threads'?)"))
      << r.err;

  const std::string store = dir.sub("store");
  r = cli({"--store", store, "stats", "--jsno"});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "unknown flag '--jsno' (did you mean '--json'?)")) << r.err;
  r = cli({"--store", store, "push", "t", "--dealy", "5s"});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "unknown flag '--dealy' (did you mean '--delay'?)")) << r.err;
  r = cli({"--verison"});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "unknown flag '--verison' (did you mean '--version'?)")) << r.err;
  r = cli({"--store", store, "stats", "--colour"});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "unknown flag '--colour'\n")) << r.err;
}

// Every JSON answer ends with a newline, so that curl's output in a terminal does not run into
// the prompt: successes, the queue's refusals and delayqd's own, a batch, HEAD's headers aside.
TEST(FirstContact, AnswersEndWithANewline) {
  TempDir dir;
  DaemonProcess daemon(DELAYQD_PATH, dir.sub("d.log"));
  const int port = daemon.start({"--listen", "127.0.0.1:0", "--store", dir.sub("s")});
  ASSERT_GT(port, 0);
  HttpClient http(port);
  const std::vector<std::pair<std::string, std::string>> posts = {
      {"/push", R"({"topic":"t","id":"a","delay":60})"},
      {"/push", R"([{"topic":"t","id":"b"},{"topic":"","id":"c"}])"},
      {"/get", R"({"id":"a"})"},
      {"/get", R"({"id":"none"})"},
      {"/push", R"({"topic":"t","id":"a"})"},
      {"/push", "not json"},
      {"/nope", "{}"},
      {"/stats", ""},
  };
  for (const auto& [path, body] : posts) {
    const HttpAnswer a = http.post(path, body);
    ASSERT_NE(a.status, 0) << path;
    ASSERT_FALSE(a.body.empty()) << path;
    EXPECT_EQ(a.body.back(), '\n') << path << " " << body << ": " << a.body;
    EXPECT_EQ(a.body.find('\n'), a.body.size() - 1) << path << ": " << a.body;
    EXPECT_TRUE(a.json.is_object()) << path << ": " << a.body;
  }
  for (const char* path : {"/health", "/metrics", "/stats"}) {
    const HttpAnswer a = http.get(path);
    ASSERT_FALSE(a.body.empty()) << path;
    EXPECT_EQ(a.body.back(), '\n') << path << ": " << a.body;
  }
}

// DELAYQ_URL and DELAYQ_TOKEN_FILE name the target when no target flag does; a flag wins over
// its variable (--url over DELAYQ_URL, --token-file over DELAYQ_TOKEN_FILE, and --store or
// --redis over DELAYQ_URL); a bad value is refused naming the variable.
TEST(FirstContact, TheCliTakesItsTargetFromTheEnvironment) {
  TempDir dir;
  const std::string token = dir.sub("token");
  std::ofstream(token) << "s3cret\n";
  ::chmod(token.c_str(), 0600);
  const std::string wrong = dir.sub("wrong");
  std::ofstream(wrong) << "other\n";
  ::chmod(wrong.c_str(), 0600);
  DaemonProcess daemon(DELAYQD_PATH, dir.sub("d.log"));
  const int port =
      daemon.start({"--listen", "127.0.0.1:0", "--store", dir.sub("s"), "--token-file", token});
  ASSERT_GT(port, 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  const std::vector<std::string> env = {"DELAYQ_URL=" + url, "DELAYQ_TOKEN_FILE=" + token};

  CliRun r = run_program(DELAYQ_CLI_PATH, {"push", "t", "--id", "e1", "--delay", "1h"}, "", env);
  EXPECT_EQ(r.exit, 0) << describe(r);
  r = run_program(DELAYQ_CLI_PATH, {"get", "e1", "--json"}, "", env);
  EXPECT_EQ(r.exit, 0) << describe(r);
  // Without DELAYQ_TOKEN_FILE the daemon refuses, and the hint names both ways to give it.
  r = run_program(DELAYQ_CLI_PATH, {"get", "e1"}, "", {"DELAYQ_URL=" + url});
  EXPECT_EQ(r.exit, 1) << describe(r);
  EXPECT_TRUE(contains(r.err, "--token-file FILE (or DELAYQ_TOKEN_FILE)")) << r.err;
  // Flags win: --token-file over DELAYQ_TOKEN_FILE, --url over DELAYQ_URL.
  r = run_program(DELAYQ_CLI_PATH, {"--token-file", wrong, "get", "e1"}, "", env);
  EXPECT_EQ(r.exit, 1) << describe(r);
  EXPECT_TRUE(contains(r.err, "401 unauthorized")) << r.err;
  r = run_program(DELAYQ_CLI_PATH, {"--url", url, "get", "e1"}, "",
                  {"DELAYQ_URL=http://127.0.0.1:1", "DELAYQ_TOKEN_FILE=" + token});
  EXPECT_EQ(r.exit, 0) << describe(r);
  // Another target flag wins over DELAYQ_URL, and DELAYQ_TOKEN_FILE does not apply to it.
  r = run_program(DELAYQ_CLI_PATH, {"--store", dir.sub("other"), "push", "t"}, "", env);
  EXPECT_EQ(r.exit, 0) << describe(r);
  // Bad values name the variable.
  r = run_program(DELAYQ_CLI_PATH, {"stats"}, "", {"DELAYQ_URL=127.0.0.1:9277"});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "bad DELAYQ_URL '127.0.0.1:9277'")) << r.err;
  r = run_program(DELAYQ_CLI_PATH, {"stats"}, "",
                  {"DELAYQ_URL=" + url, "DELAYQ_TOKEN_FILE=" + dir.sub("missing")});
  EXPECT_EQ(r.exit, 1) << describe(r);
  EXPECT_TRUE(contains(r.err, "cannot read DELAYQ_TOKEN_FILE " + dir.sub("missing"))) << r.err;
  // With neither a flag nor DELAYQ_URL, the refusal names both.
  r = run_program(DELAYQ_CLI_PATH, {"stats"});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "no target: give --store DIR, --url http://HOST:PORT (or "
                              "DELAYQ_URL, or url in ~/.config/delayq/cli.conf) or --redis URL"))
      << r.err;
}

// The settings file (docs/cli.md): url and token-file under the environment, DELAYQ_CONFIG or
// $XDG_CONFIG_HOME/delayq/cli.conf; a relative token-file is the file's neighbour; bad lines
// are refused naming the file and line.
TEST(FirstContact, TheCliTakesItsTargetFromItsSettingsFile) {
  TempDir dir;
  const std::string token = dir.sub("token");
  std::ofstream(token) << "s3cret\n";
  ::chmod(token.c_str(), 0600);
  DaemonProcess daemon(DELAYQD_PATH, dir.sub("d.log"));
  const int port =
      daemon.start({"--listen", "127.0.0.1:0", "--store", dir.sub("s"), "--token-file", token});
  ASSERT_GT(port, 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  const auto write = [&](const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
  };
  // XDG_CONFIG_HOME's delayq/cli.conf, with a comment, blanks and a relative token-file.
  write(dir.sub("xdg/delayq/cli.conf"), "# the daemon\n\nurl = " + url +
                                            "\n  token-file = ../../token  \n");
  const std::vector<std::string> xdg = {"XDG_CONFIG_HOME=" + dir.sub("xdg")};
  CliRun r = run_program(DELAYQ_CLI_PATH, {"push", "t", "--id", "f1", "--delay", "1h"}, "", xdg);
  EXPECT_EQ(r.exit, 0) << describe(r);
  // DELAYQ_CONFIG names another file; the environment wins over the file.
  write(dir.sub("other.conf"), "url = http://127.0.0.1:1\ntoken-file = " + token + "\n");
  r = run_program(DELAYQ_CLI_PATH, {"get", "f1"}, "",
                  {"DELAYQ_CONFIG=" + dir.sub("other.conf"), "DELAYQ_URL=" + url});
  EXPECT_EQ(r.exit, 0) << describe(r);
  r = run_program(DELAYQ_CLI_PATH, {"get", "f1"}, "", {"DELAYQ_CONFIG=" + dir.sub("other.conf")});
  EXPECT_EQ(r.exit, 1) << describe(r);
  EXPECT_TRUE(contains(r.err, "127.0.0.1:1")) << r.err;
  // Bad files are refused with the file and the line.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"urll = " + url + "\n", "cli.conf:1: unknown setting 'urll' (did you mean 'url'?)"},
      {"\nurl\n", "cli.conf:2: expected 'name = value', got 'url'"},
      {"url =\n", "cli.conf:1: setting 'url' has no value"},
      {"url = " + url + "\nurl = " + url + "\n", "cli.conf:2: setting 'url' given twice"},
      {"url = localhost:9277\n", "bad url in " + dir.sub("bad/cli.conf") + ":1 'localhost:9277'"},
  };
  for (const auto& [text, says] : bad) {
    write(dir.sub("bad/cli.conf"), text);
    r = run_program(DELAYQ_CLI_PATH, {"stats"}, "", {"DELAYQ_CONFIG=" + dir.sub("bad/cli.conf")});
    EXPECT_EQ(r.exit, 2) << describe(r);
    EXPECT_TRUE(contains(r.err, says)) << text << " -> " << r.err;
  }
  r = run_program(DELAYQ_CLI_PATH, {"stats"}, "", {"DELAYQ_CONFIG=" + dir.sub("missing.conf")});
  EXPECT_EQ(r.exit, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "cannot read the settings file " + dir.sub("missing.conf") +
                              " (named by DELAYQ_CONFIG)"))
      << r.err;
}

// A Redis queue keeps the shard count it was created with: the CLI reads it from the queue when
// --shards is not given; a --shards that differs is refused as before.
TEST(FirstContact, TheCliReadsARedisQueuesShardCount) {
  RedisServer server;
  ASSERT_TRUE(server.started()) << "redis-server did not start: " << server.log();
  {
    auto q = delayq::open_redis({.url = server.url(), .queue = "wide", .shards = 4});
    ASSERT_TRUE(q.ok()) << q.status().to_string();
  }
  const std::vector<std::string> target = {"--redis", server.url(), "--queue", "wide"};
  const auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin(), target.begin(), target.end());
    return args;
  };
  CliRun r = cli(with({"push", "t", "--id", "w1", "--delay", "1h"}));
  EXPECT_EQ(r.exit, 0) << describe(r);
  r = cli(with({"get", "w1", "--json"}));
  EXPECT_EQ(r.exit, 0) << describe(r);
  r = cli(with({"--shards", "4", "stats"}));
  EXPECT_EQ(r.exit, 0) << describe(r);
  r = cli(with({"--shards", "2", "stats"}));
  EXPECT_EQ(r.exit, 1) << describe(r);
  EXPECT_TRUE(contains(r.err, "was created with 4 shards")) << r.err;
  // A queue that does not exist yet is made with one shard, as before.
  r = cli({"--redis", server.url(), "--queue", "fresh", "push", "t"});
  EXPECT_EQ(r.exit, 0) << describe(r);
  r = cli({"--redis", server.url(), "--queue", "fresh", "--shards", "1", "stats"});
  EXPECT_EQ(r.exit, 0) << describe(r);
}

}  // namespace
