// Running the delayq CLI (and delayqd's flag checks) as child processes for the CLI tests: a
// run's exit status, stdout and stderr. The daemon on a port, and temporary directories, are
// tests/support/daemon_process.h's. Needs DELAYQ_CLI_PATH and DELAYQD_PATH (tests/CMakeLists.txt defines
// them).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "daemon_process.h"
#include "wire/json.h"

namespace delayq::testing {

namespace json = delayq::wire::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct CliRun {
  int exit = -1;
  std::string out, err;
  json::Value json() const {
    auto v = json::parse(out);
    EXPECT_TRUE(v.ok()) << "not JSON: " << out << " " << v.status().to_string();
    return v.ok() ? *v : json::Value();
  }
};

inline std::string describe(const CliRun& r) {
  return "exit " + std::to_string(r.exit) + "\nstdout:\n" + r.out + "stderr:\n" + r.err;
}

// Runs `bin args...` with `input` on stdin, TZ=UTC so that times print alike everywhere, and
// `env` ("NAME=value") beside it: nothing else of the test's environment reaches the program.
inline CliRun run_program(std::string bin, const std::vector<std::string>& args,
                          const std::string& input = "", std::vector<std::string> env = {}) {
  CliRun r;
  int in[2], out[2], err[2];
  if (::pipe(in) != 0 || ::pipe(out) != 0 || ::pipe(err) != 0) return r;
  std::vector<std::string> copy = args;
  std::vector<char*> argv{bin.data()};
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string tz = "TZ=UTC";
  std::vector<char*> envp{tz.data()};
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) ::close(fd);
    ::execve(bin.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  // Bodies in these tests are small: they fit in the pipe at once.
  if (!input.empty()) (void)!::write(in[1], input.data(), input.size());
  ::close(in[1]);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open = 2;
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (open > 0 && std::chrono::steady_clock::now() < deadline) {
    if (::poll(fds, 2, 500) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[4096];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  for (auto& p : fds)
    if (p.fd >= 0) {
      ::kill(pid, SIGKILL);
      ::close(p.fd);
    }
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// Runs `delayq args...` (the CLI binary of this build).
inline CliRun cli(const std::vector<std::string>& args, const std::string& input = "") {
  return run_program(DELAYQ_CLI_PATH, args, input);
}

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

inline const json::Value& at(const json::Value& v, std::string_view key) {
  static const json::Value null;
  const json::Value* m = v.find(key);
  EXPECT_NE(m, nullptr) << "no member " << key;
  return m != nullptr ? *m : null;
}

}  // namespace delayq::testing
