// What the delayq CLI needs from a queue, in one small interface with two implementations: the
// Queue interface itself (the embedded store, Redis) and delayqd's HTTP API. The commands are
// written once against it and cannot tell the targets apart.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "delayq/error.h"
#include "delayq/job.h"
#include "wire/http_client.h"

namespace delayq::cli {

class Backend {
 public:
  virtual ~Backend() = default;

  virtual Result<std::string> push(JobSpec spec) = 0;
  virtual Result<JobInfo> get(const std::string& id) = 0;
  virtual Status cancel(const std::string& id) = 0;
  virtual Result<Stats> stats() = 0;
  virtual Result<std::vector<JobInfo>> list_dead(const std::string& topic, size_t limit) = 0;
  virtual Status requeue_dead(const std::string& id) = 0;
  virtual Result<uint64_t> requeue_dead_topic(const std::string& topic) = 0;
  virtual Result<uint64_t> purge_dead(const std::string& topic) = 0;
  // Queue::pause (paused) or Queue::resume.
  virtual Status set_paused(const std::string& topic, bool paused) = 0;
  // A consistent copy of the queue in `dir` (a store), or under the name `dir` in the daemon's
  // --backup-dir (delayqd); returns the directory written.
  virtual Result<std::string> backup(const std::string& dir) = 0;
};

// How a command uses its target. A store directory that does not exist is created only for
// `create` (push); a store is opened read-only (nothing changes on disk) for `read`.
enum class Access { read, write, create };

// Where the commands go: exactly one of store_dir, url, redis_url is set.
struct Target {
  std::string store_dir;
  std::string url;
  std::string token_file;  // --url only
  // Where url and token_file came from, for messages: the flag, or the environment variable
  // that stood for it (DELAYQ_URL, DELAYQ_TOKEN_FILE).
  std::string url_source = "--url";
  std::string token_source = "--token-file";
  std::string redis_url;
  std::string queue;    // --redis only; empty: "default"
  uint32_t shards = 0;  // --redis only; 0: the queue's own count (1 for a new queue)
};

// The value of --url (or of `source`, DELAYQ_URL): http://HOST:PORT[/PREFIX]. Errors:
// invalid_argument, "bad --url '...': " what is wrong with it, and what a good one looks like.
Result<wire::HttpEndpoint> parse_url_flag(std::string_view text,
                                          std::string_view source = "--url");

// Opens the target for `access`.
// Errors: unavailable (a store directory in use by a running process, a server that cannot be
// reached), invalid_argument (a bad URL or token file), and whatever opening the queue reports.
Result<std::unique_ptr<Backend>> open_backend(const Target& target, Access access);

}  // namespace delayq::cli
