// What delayqd's connections share, and how one is served (the Session of session_machine.h): the
// server (server.cc) accepts a socket, counts it in (Connections::admit) and hands it to
// serve_connection; on SIGTERM it asks every open connection to drain.
#pragma once

#include <utility>  // before Asio: Boost 1.74 needs it with g++ 12 in C++20

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "delayqd/api.h"
#include "delayqd/server.h"

namespace delayq::http {

class Session;

// What the connections share: the Api, the limits, the registry that the drain walks, and the
// connection counts (in all, and per remote address).
struct Connections {
  Api& api;
  const ServerOptions& options;
  std::mutex mu;
  std::map<Session*, std::weak_ptr<Session>> sessions;
  std::map<boost::asio::ip::address, size_t> per_client;  // under mu
  std::atomic<size_t> count{0};

  // Counts a new connection; returns why it must be refused, or "" to serve it.
  std::string admit(const boost::asio::ip::address& peer) {
    const size_t all = ++count;
    std::lock_guard lock(mu);
    const size_t mine = ++per_client[peer];
    if (all > options.max_connections)
      return "too many connections (" + std::to_string(options.max_connections) + "); retry later";
    if (options.max_connections_per_client > 0 && mine > options.max_connections_per_client)
      return "too many connections from " + peer.to_string() + " (" +
             std::to_string(options.max_connections_per_client) +
             ", --max-connections-per-client); close some or retry later";
    return {};
  }
  void leave(const boost::asio::ip::address& peer) {
    --count;
    std::lock_guard lock(mu);
    if (auto it = per_client.find(peer); it != per_client.end() && --it->second == 0)
      per_client.erase(it);
  }
};

// Serves one accepted connection until it closes: its requests, keep-alive, deadlines, and the
// watch for a client that leaves. A non-empty `refusal` is answered (503) and the connection
// closed: it was over a connection limit.
void serve_connection(boost::asio::ip::tcp::socket socket, Connections& connections,
                      boost::asio::ip::address peer, std::string refusal);

// Drain: every open connection that waits for a next request is closed now; one in the middle
// of a request finishes it (its answer says Connection: close).
void drain_connections(Connections& connections);

}  // namespace delayq::http
