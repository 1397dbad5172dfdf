// Where the delayq CLI's commands go: a store directory, Redis, or a delayqd (open_http), each
// opened as a Queue. The commands are written once against the Queue interface; two things are
// not Queue calls and are asked of the target here: a backup, and stats with the reason they
// could not be read.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "delayq/error.h"
#include "delayq/job.h"
#include "delayq/queue.h"
#include "wire/http_client.h"

namespace delayq::cli {

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
  // --redis only: its password, or the file that holds it (and where that was named, for
  // messages: --redis-password-file, or the settings file's line).
  std::string redis_password;
  std::string redis_password_file;
  std::string redis_password_source = "--redis-password-file";
  std::string queue;    // --redis only; empty: "default"
  uint32_t shards = 0;  // --redis only; 0: the queue's own count (1 for a new queue)
  uint32_t replicas_to_ack = 0;         // --redis only: RedisOptions::replicas_to_ack
  uint32_t replicas_timeout_ms = 1000;  // --redis only: RedisOptions::replicas_timeout
};

// The value of --url (or of `source`, DELAYQ_URL): http://HOST:PORT[/PREFIX]. Errors:
// invalid_argument, "bad --url '...': " what is wrong with it, and what a good one looks like.
Result<wire::HttpEndpoint> parse_url_flag(std::string_view text,
                                          std::string_view source = "--url");

// Opens the target for `access`.
// Errors: unavailable (a store directory in use by a running process, a server that cannot be
// reached), invalid_argument (a bad URL or token file), and whatever opening the queue reports.
Result<std::unique_ptr<Queue>> open_target(const Target& target, Access access);

// The queue's stats; from a delayqd, the reason when it did not answer (Queue::stats() has none).
Result<Stats> stats_of(Queue& q);

// A consistent copy of the queue in `dir` (a store), or under the name `dir` in the daemon's
// --backup-dir (delayqd); returns the directory written. Redis: invalid_argument.
Result<std::string> backup_of(Queue& q, const std::string& dir);

// `s`, with what the CLI user does about it when the daemon asked for its bearer token.
Status with_cli_hint(Status s);

}  // namespace delayq::cli
