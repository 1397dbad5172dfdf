// The outside project's program: opens a durable store in the directory it is given, pushes a
// job due now, takes it and acknowledges it, and has open_http (the HTTP client, installed
// beside the store) refuse a URL that is not one; prints "consumer ok" when all of that worked.
#include <cstdio>

#include <delayq/http.h>
#include <delayq/store.h>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  delayq::StoreOptions o;
  o.dir = argv[1];
  auto q = delayq::open_store(o);
  if (!q) {
    std::fprintf(stderr, "%s\n", q.status().to_string().c_str());
    return 1;
  }
  if (!(*q)->push({.topic = "t", .id = "hello", .body = "world"}).ok()) return 1;
  auto d = (*q)->reserve("t", std::chrono::seconds(5));
  if (!d || d->body != "world" || !(*q)->ack(d->token).ok()) return 1;
  if (!delayq::open_http("localhost:9277").is(delayq::Errc::invalid_argument)) return 1;
  std::printf("consumer ok\n");
  return 0;
}
