// The latest token delayqd handed out per job id. ouqiang/delay-queue's /finish names only the
// job, so /finish, /nack, /touch and /dead_letter without a "token" use the latest delivery of
// the job that this daemon made (routes_settle.cc). Bounded: past `capacity` entries an
// arbitrary one goes; its job can still be settled with its token (the pop answer carries it),
// or after its lease with a new pop. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "delayq/job.h"

namespace delayq::http {

class TokenMemory {
 public:
  explicit TokenMemory(size_t capacity) : capacity_(capacity) {}

  void remember(const Token& token);
  // The latest token of job `id`, or nullopt when none is remembered.
  std::optional<Token> latest(const std::string& id);
  void forget(const std::string& id);

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::unordered_map<std::string, uint64_t> fences_;  // job id -> fence of its latest delivery
};

}  // namespace delayq::http
