// The store's lock and lock_holder() (lock.h).
#include "wal/lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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

std::string name_process(pid_t pid) {
  // A holder in another PID namespace (a container) shows as 0; a lock file written by a
  // process that has not yet written its id shows nothing.
  if (pid <= 0) return "another process";
  if (pid == ::getpid()) return "this process";
  const std::string name = program_name(pid);
  return "process " + std::to_string(pid) + (name.empty() ? "" : " (" + name + ")");
}

// The process id written into an open lock file by its holder, or 0.
pid_t written_pid(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  if (n <= 0) return 0;
  char* end = nullptr;
  const long pid = std::strtol(text, &end, 10);
  return end != text && pid > 0 && pid < (1L << 30) ? static_cast<pid_t>(pid) : 0;
}

struct flock whole_file_write_lock() {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;  // l_start = l_len = 0: the whole file; l_pid 0, as F_OFD_* require
  return fl;
}

std::string errno_text(int e) { return std::strerror(e); }

}  // namespace

Status store_in_use(const std::string& dir, const std::string& holder, const std::string& detail) {
  if (holder == "this process" || holder.empty())
    return Status(Errc::unavailable,
                  "store directory " + dir +
                      " is in use: this process already has it open (another open_store on it), "
                      "and a store can be open once at a time" +
                      (detail.empty() ? "" : " (" + detail + ")"));
  return Status(Errc::unavailable,
                "store directory " + dir + " is locked by " + holder +
                    ": it is in use by another process, and a store can be open in one process at "
                    "a time; stop that process first, or go through it");
}

Result<std::unique_ptr<StoreLock>> StoreLock::take(const std::string& dir) {
  const std::string path = dir + "/" + kStoreLockFile;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status(Errc::io_error, "store " + dir + ": cannot open its lock file " + path + ": " +
                                      errno_text(errno));
  struct flock fl = whole_file_write_lock();
  if (::fcntl(fd, F_OFD_SETLK, &fl) != 0) {
    const int e = errno;
    if (e == EAGAIN || e == EACCES) {
      const std::string holder = name_process(written_pid(fd));
      ::close(fd);
      return store_in_use(dir, holder, "");
    }
    ::close(fd);
    return Status(Errc::io_error,
                  "store " + dir + ": cannot lock its lock file " + path + ": " + errno_text(e));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int e = errno;
    ::close(fd);
    return Status(Errc::io_error,
                  "store " + dir + ": cannot write its lock file " + path + ": " + errno_text(e));
  }
  return std::unique_ptr<StoreLock>(new StoreLock(fd));
}

StoreLock::~StoreLock() { ::close(fd_); }

std::string lock_holder(const std::string& dir) {
  const std::string path = dir + "/" + kStoreLockFile;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    struct flock fl = whole_file_write_lock();
    const int rc = ::fcntl(fd, F_OFD_GETLK, &fl);
    const pid_t pid = rc == 0 && fl.l_type != F_UNLCK ? written_pid(fd) : -1;
    ::close(fd);  // an OFD lock of this process's store is not dropped by this close
    if (pid >= 0) return name_process(pid);
  }
  return rocksdb_lock_holder(dir);
}

std::string rocksdb_lock_holder(const std::string& dir) {
  const std::string path = dir + "/LOCK";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  struct flock fl = whole_file_write_lock();
  // A classic lock query: within one process such locks never conflict, so a holder found here
  // is another process. (Closing this descriptor would drop a classic lock this process held on
  // LOCK: see lock.h for why none is held here.)
  const int rc = ::fcntl(fd, F_GETLK, &fl);
  ::close(fd);
  if (rc != 0 || fl.l_type == F_UNLCK) return {};
  return name_process(fl.l_pid);
}

}  // namespace delayq::wal
