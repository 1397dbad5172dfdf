// One delayqd connection's state machine (Session), declared whole here so that its state and the
// invariants that tie it together (reading_, watching_, resume_, gone_, lingering_) are read in
// one place. Its members are defined by what they own:
//   session.cc        the connection's life: start, the watch for a client that leaves while
//                     its answer is made, the drain, the linger after a last answer, the close
//   session_read.cc   reading a request: deadlines, the head's checks, the one screening
//                     (Api::screen), the body, the hand-over to the Api
//   session_write.cc  writing an answer, then on to the next request or to the end
// Private to those files; the server sees only session.h.
#pragma once

#include <utility>  // before Asio: Boost 1.74 needs it with g++ 12 in C++20

#include <array>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "delayqd/api.h"
#include "delayqd/session.h"

namespace delayq::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

// What a look at a socket without reading it finds.
enum class Peer { quiet, sent_more, gone };
Peer look(tcp::socket& s);

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Connections& shared, asio::ip::address peer, std::string refusal)
      : stream_(std::move(socket)), shared_(shared), peer_(peer), refusal_(std::move(refusal)) {}
  ~Session();

  void start();
  // Drain: a connection waiting for a next request that has not begun is closed now; one in
  // the middle of a request finishes it (its answer says Connection: close).
  void drain();

 private:
  // The most a request's head may hold (docs/http-api.md).
  static constexpr size_t kHeaderLimit = 16 * 1024;
  // Bytes of a next request kept while the current one is answered (pipelining); beyond this
  // the client is plainly there, and the watch stops.
  static constexpr size_t kPipelined = 64 * 1024;

  // Reading a request (session_read.cc).
  void read();
  void read_header();
  void on_header(beast::error_code ec, size_t head_bytes);
  void read_body();
  void on_error(beast::error_code ec);
  void on_read(beast::error_code ec, size_t);
  Response too_large();
  Response headers_too_large();

  // Writing its answer (session_write.cc).
  void write(Response r);
  void after_answer(bool next);

  // The connection's life (session.cc).
  void watch();
  void on_watch(beast::error_code ec);
  void linger();
  void discard(size_t so_far);
  void close();

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::optional<Screening> screening_;  // the current request's, once its headers have come
  Connections& shared_;
  const asio::ip::address peer_;
  const std::string refusal_;  // why this connection is refused, "" when it is served
  std::stop_source leaving_;   // the current request's: requested when the client has gone
  std::shared_ptr<std::atomic<bool>> answered_;  // the current request's answer was given
  std::array<char, 4096> sink_;
  bool reading_ = false;
  bool watching_ = false;   // a watch (socket wait) is outstanding
  bool resume_ = false;     // read() once the outstanding watch ends
  bool gone_ = false;       // the client closed its side
  bool lingering_ = false;  // the last answer is written; discarding what still comes
  bool keep_alive_ = false;
  bool head_ = false;  // the current request is HEAD: its answer has no body
  unsigned version_ = 11;
};

}  // namespace delayq::http
