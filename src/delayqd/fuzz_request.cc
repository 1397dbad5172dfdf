// libFuzzer target: arbitrary bytes as the body of a request to an arbitrary route, through the
// JSON reader and the Api, over an in-memory engine. Looks for crashes, sanitizer reports and
// answers that are not valid JSON in the common shape. Build and run: scripts/fuzz.sh.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "delayq/engine.h"
#include "delayqd/api.h"
#include "wire/json.h"

namespace {

const char* const kTargets[] = {
    "/push", "/push_batch", "/pop",         "/finish",       "/ack",        "/nack",
    "/touch", "/dead_letter", "/delete",    "/get",          "/reschedule", "/stats",
    "/dead/list", "/dead/requeue", "/dead/purge", "/metrics", "/health",    "/ui",
    "/pause", "/resume", "/release", "/limits/set", "/limits/clear", "/jobs/list",
    "/schedules/set", "/schedules/remove", "/schedules/get", "/schedules/list", "/schedules/pause",
    "/schedules/resume", "/nope",
};

struct World {
  std::unique_ptr<delayq::Engine> queue;
  std::unique_ptr<delayq::http::Api> api;
  World() {
    delayq::EngineOptions opt;
    opt.limits.max_body_bytes = 4096;
    queue = delayq::Engine::open(opt).value();
    delayq::http::ApiOptions a;
    // Pops must answer at once: a fuzz input must never wait.
    a.default_pop_timeout = a.max_pop_timeout = std::chrono::seconds(0);
    a.max_remembered_tokens = 64;
    api = std::make_unique<delayq::http::Api>(*queue, a);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World world;
  if (size < 1) return 0;
  // First byte: route and method; the rest: the body.
  const uint8_t selector = data[0];
  delayq::http::Request req;
  req.target = kTargets[selector % std::size(kTargets)];
  req.method = (selector & 0x80) ? "GET" : "POST";
  req.body.assign(reinterpret_cast<const char*>(data + 1), size - 1);

  // The reader alone, on the same bytes.
  (void)delayq::wire::json::parse(req.body);

  // Shared: should a pop be answered late, from the engine's thread, the flag is still alive.
  auto answered = std::make_shared<std::atomic<bool>>(false);
  world.api->handle(std::move(req), [answered](delayq::http::Response r) {
    answered->store(true);
    if (r.content_type != "application/json") return;
    // Answers may be larger than a request may be (/stats of many topics): the reply limits.
    auto body = delayq::wire::json::parse(r.body, delayq::wire::json::kReplyLimits);
    if (!body || body->find("code") == nullptr || body->find("message") == nullptr ||
        body->find("data") == nullptr)
      std::abort();  // every JSON answer must be valid and in the common shape
  });
  // A pop with timeout 0 may be answered from the engine's thread: wait for it a little.
  for (int i = 0; i < 1000 && !answered->load(); ++i)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  return 0;
}
