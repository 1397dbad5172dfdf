// The Redis password in the CLI and in delayqd, against a private redis-server started with
// --requirepass: read from a file (--redis-password-file, or the settings/config file), from
// DELAYQ_REDIS_PASSWORD, or from the url of delayqd's config file; refused on the command line
// (where ps shows it), with a message that says where to put it; a missing or wrong one fails
// naming AUTH; and no output shows the password.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "http_client.h"
#include "redis_server.h"
#include "temp_dir.h"

namespace {

using delayq::testing::cli;
using delayq::testing::CliRun;
using delayq::testing::contains;
using delayq::testing::DaemonProcess;
using delayq::testing::describe;
using delayq::testing::HttpAnswer;
using delayq::testing::HttpClient;
using delayq::testing::RedisServer;
using delayq::testing::run_program;
using delayq::testing::TempDir;

const std::string kPassword = "cli secret 42";

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), 0600);
}

// `r` failed with `exit`, its stderr holds every one of `parts`, and nothing shows a password.
void failed(const CliRun& r, int exit, const std::vector<std::string>& parts) {
  EXPECT_EQ(r.exit, exit) << describe(r);
  for (const std::string& p : parts) EXPECT_TRUE(contains(r.err, p)) << p << "\n" << r.err;
  for (const std::string& secret : {kPassword, std::string("cli%20secret"), std::string("wrong pw")})
    EXPECT_FALSE(contains(r.out + r.err, secret)) << "a password is shown:\n" << describe(r);
}

class RedisAuthTargets : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(redis_.started()) << redis_.log();
    write_file(dir_.sub("pw"), kPassword + "\n");  // one trailing line break is not part of it
    write_file(dir_.sub("wrong"), "wrong pw");
  }
  RedisServer redis_{{"--requirepass", kPassword}};
  TempDir dir_{"redis-auth-cli"};
};

TEST_F(RedisAuthTargets, TheCliReadsThePasswordFromAFileOrTheEnvironment) {
  const std::vector<std::string> t = {"--redis", redis_.url(), "--queue", "a"};
  const auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin(), t.begin(), t.end());
    return args;
  };
  CliRun push = cli(with({"--redis-password-file", dir_.sub("pw"), "push", "t", "--id", "x"}));
  ASSERT_EQ(push.exit, 0) << describe(push);
  CliRun get = run_program(DELAYQ_CLI_PATH, with({"get", "x"}), "",
                           {"DELAYQ_REDIS_PASSWORD=" + kPassword});
  ASSERT_EQ(get.exit, 0) << describe(get);
  EXPECT_TRUE(contains(get.out, "state       ")) << get.out;
  // The settings file names the file, relative to itself.
  write_file(dir_.sub("cli.conf"), "redis-password-file = pw\n");
  CliRun cancel = run_program(DELAYQ_CLI_PATH, with({"cancel", "x"}), "",
                              {"DELAYQ_CONFIG=" + dir_.sub("cli.conf")});
  ASSERT_EQ(cancel.exit, 0) << describe(cancel);

  // The flag over the variable, the variable over the settings file.
  failed(run_program(DELAYQ_CLI_PATH, with({"--redis-password-file", dir_.sub("wrong"), "stats"}),
                     "", {"DELAYQ_REDIS_PASSWORD=" + kPassword}),
         1, {"WRONGPASS"});
  write_file(dir_.sub("wrong.conf"), "redis-password-file = wrong\n");
  CliRun env_first = run_program(DELAYQ_CLI_PATH, with({"stats"}), "",
                                 {"DELAYQ_REDIS_PASSWORD=" + kPassword,
                                  "DELAYQ_CONFIG=" + dir_.sub("wrong.conf")});
  EXPECT_EQ(env_first.exit, 0) << describe(env_first);

  failed(cli(with({"stats"})), 1, {"requires AUTH", "NOAUTH", "redis-password"});
  failed(cli(with({"--redis-password-file", dir_.sub("wrong"), "stats"})), 1,
         {"refused AUTH", "WRONGPASS"});
  failed(cli(with({"--redis-password-file", dir_.sub("none"), "stats"})), 1,
         {"--redis-password-file: cannot read the Redis password file"});
  failed(cli({"--redis", redis_.url() + "?password=cli%20secret%2042", "stats"}), 2,
         {"--redis holds a password", "--redis-password-file FILE", "DELAYQ_REDIS_PASSWORD"});
  failed(cli({"--store", dir_.sub("s"), "--redis-password-file", dir_.sub("pw"), "stats"}), 2,
         {"apply to --redis only"});
}

TEST_F(RedisAuthTargets, DelayqdReadsThePasswordFromAFileTheEnvironmentOrItsConfig) {
  const std::vector<std::string> base = {"--listen", "127.0.0.1:0", "--redis", redis_.url(),
                                         "--queue", "d"};
  const auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), base.begin(), base.end());
    return extra;
  };
  write_file(dir_.sub("delayqd.conf"),
             "redis = " + redis_.url() + "?password=cli%20secret%2042\nqueue = d\n");
  const auto serves = [&](const std::vector<std::string>& args, const char* id) {
    DaemonProcess d(DELAYQD_PATH, dir_.sub("delayqd.log"));
    const int port = d.start(args);
    ASSERT_GT(port, 0) << args.back();
    HttpClient c(port);
    HttpAnswer push = c.post("/push", std::string(R"({"topic":"t","id":")") + id + R"("})");
    EXPECT_EQ(push.code(), 0) << push.body;
    HttpAnswer pop = c.post("/pop", R"({"topic":"t","timeout":30})");
    EXPECT_EQ(pop.code(), 0) << pop.body;
    EXPECT_EQ(pop.data_string("id"), id) << pop.body;
  };
  serves(with({"--redis-password-file", dir_.sub("pw")}), "from-file");
  serves({"--listen", "127.0.0.1:0", "--config", dir_.sub("delayqd.conf")}, "from-config");
  ::setenv("DELAYQ_REDIS_PASSWORD", kPassword.c_str(), 1);  // the child inherits it
  serves(with({}), "from-env");
  ::unsetenv("DELAYQ_REDIS_PASSWORD");

  const auto delayqd = [&](const std::vector<std::string>& args, std::vector<std::string> env = {}) {
    return run_program(DELAYQD_PATH, args, "", std::move(env));
  };
  failed(delayqd(with({})), 1, {"cannot open the Redis queue", "NOAUTH"});
  failed(delayqd(with({"--redis-password-file", dir_.sub("wrong")})), 1, {"refused AUTH", "WRONGPASS"});
  failed(delayqd({"--redis", redis_.url() + "?password=cli%20secret%2042"}), 2,
         {"--redis holds a password", "--redis-password-file FILE", "DELAYQ_REDIS_PASSWORD",
          "--config file"});
  failed(delayqd(with({"--redis-password-file", dir_.sub("pw")}), {"DELAYQ_REDIS_PASSWORD=x"}), 2,
         {"given more than once (--redis-password-file and DELAYQ_REDIS_PASSWORD)"});
  failed(delayqd({"--config", dir_.sub("delayqd.conf")}, {"DELAYQ_REDIS_PASSWORD=x"}), 2,
         {"given more than once"});
}

}  // namespace
