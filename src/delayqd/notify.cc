// NOTIFY_SOCKET datagrams (see notify.h).
#include "delayqd/notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace delayq::http {

std::string notify_service_manager(std::string_view state) {
  const char* env = std::getenv("NOTIFY_SOCKET");
  if (env == nullptr || *env == '\0') return "";
  const std::string name = env;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (name[0] != '/' && name[0] != '@')
    return "NOTIFY_SOCKET '" + name + "' is neither an absolute path nor an abstract name (@...)";
  if (name.size() > sizeof(addr.sun_path) - (name[0] == '/' ? 1 : 0))
    return "NOTIFY_SOCKET '" + name + "' is longer than a unix socket address (" +
           std::to_string(sizeof(addr.sun_path) - 1) + " bytes)";
  std::memcpy(addr.sun_path, name.data(), name.size());
  if (name[0] == '@') addr.sun_path[0] = '\0';  // abstract: no terminating NUL counts
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() +
                                          (name[0] == '/' ? 1 : 0));
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::string("cannot make a socket for NOTIFY_SOCKET: ") + std::strerror(errno);
  ssize_t sent;
  do {
    sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                    reinterpret_cast<const sockaddr*>(&addr), len);
  } while (sent < 0 && errno == EINTR);
  const int err = errno;
  ::close(fd);
  if (sent < 0)
    return "cannot send " + std::string(state) + " to NOTIFY_SOCKET " + name + ": " +
           std::strerror(err);
  return "";
}

}  // namespace delayq::http
