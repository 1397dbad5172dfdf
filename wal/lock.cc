// lock_holder() (lock.h).
#include "wal/lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>

namespace delayq::wal {

namespace {

// The program name of `pid` (/proc/PID/comm), or "" when it cannot be read.
std::string program_name(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  if (!in || !std::getline(in, name)) return {};
  return name;
}

}  // namespace

std::string lock_holder(const std::string& dir) {
  const std::string path = dir + "/LOCK";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  const int rc = ::fcntl(fd, F_GETLK, &fl);
  ::close(fd);
  if (rc != 0 || fl.l_type == F_UNLCK) return {};
  // A holder in another PID namespace (a container) shows as 0.
  if (fl.l_pid <= 0) return "another process";
  const std::string name = program_name(fl.l_pid);
  return "process " + std::to_string(fl.l_pid) + (name.empty() ? "" : " (" + name + ")");
}

}  // namespace delayq::wal
