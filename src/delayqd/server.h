// The HTTP/1.1 front of delayqd: Boost.Beast over Asio, keep-alive, one Api behind it. Only
// server.cc includes Beast; this header keeps it out of everything else.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "delayq/queue.h"
#include "delayqd/api.h"

namespace delayq::http {

// Asks a running run_server() to drain and return, as SIGTERM does, from any thread: for a server
// that runs inside a test or a program that does not hand its signals to it. A request made
// before the server listens takes effect as soon as it does; one made after it returned does
// nothing. Outlives the run_server() call it is given to.
class ServerStop {
 public:
  void request();

 private:
  friend bool run_server_hook(ServerStop&, std::function<void()>);
  std::mutex mu_;
  bool requested_ = false;
  std::function<void()> hook_;  // set while a server runs
};

struct ServerOptions {
  std::string host = "127.0.0.1";  // an IPv4 or IPv6 address
  uint16_t port = 9277;            // 0: any free port (reported to on_listening)
  // Threads that run the sockets and the (synchronous) queue calls. More than the cores helps
  // when calls wait for the disk (Sync::always: concurrent calls share one fsync).
  size_t threads = 4;
  // Open connections; one more is answered 503 and closed.
  size_t max_connections = 1024;
  // Open connections from one remote address; one more is answered 503 and closed. 0: only
  // max_connections (behind a proxy every connection comes from the proxy's address).
  size_t max_connections_per_client = 0;
  // Largest request body; a larger one is answered 413 and the connection closed.
  size_t max_body_bytes = size_t{4} << 20;
  // A connection that sends nothing for this long after connecting or after an answer (an idle
  // keep-alive connection) is closed; also the bound on writing an answer.
  std::chrono::seconds idle_timeout{60};
  // From the first byte of a request to the end of its headers, and from there to the end of
  // its body: total deadlines, so a client that trickles a byte at a time cannot stretch them.
  std::chrono::seconds header_timeout{10};
  std::chrono::seconds body_timeout{60};
  // On SIGTERM, how long to wait for requests in flight before closing the queue anyway.
  std::chrono::seconds drain_timeout{30};
  // When set, request() on it drains and stops the server as SIGTERM does (SIGTERM and SIGINT
  // still do too).
  ServerStop* stop = nullptr;
};

// Installs (or, with an empty `hook`, removes) what ServerStop::request() calls; true when a
// request came before. For run_server().
bool run_server_hook(ServerStop& stop, std::function<void()> hook);

// Listens, serves until SIGTERM or SIGINT (or options.stop's request), then drains: stops accepting, answers new requests
// 503, waits for requests in flight, closes `queue` (waiting pops are answered with no job),
// and returns once every connection has finished its answer. `on_listening` gets the bound
// "host:port" once the socket listens (a connection made from then on is answered);
// `on_draining`, when given, is called as the drain begins. Returns false with `error` set if it
// could not listen.
bool run_server(Api& api, Queue& queue, const ServerOptions& options,
                const std::function<void(const std::string&)>& on_listening, std::string& error,
                const std::function<void()>& on_draining = {});

}  // namespace delayq::http
