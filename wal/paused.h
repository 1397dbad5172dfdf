// The paused topics (Queue::pause) in the journal: one key per paused topic in family "meta",
// "paused/<topic>", its value a version byte (1). A resume deletes the key. Written with the
// pipeline's groups, in call order (commit_pipeline.h); read once at open.
//
// An older delayq (before pauses existed) reads only the keys of "meta" it knows, so it opens
// such a store and ignores the keys: its topics all run, and the keys stay for the next newer
// build, which pauses them again. Nothing is misread, so the format version stays
// (docs/journal-format.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "delayq/error.h"
#include "wal/database.h"

namespace delayq::wal {

inline constexpr char kPausedPrefix[] = "paused/";
inline constexpr uint8_t kPausedVersion = 1;

std::string paused_key(std::string_view topic);
std::string encode_paused();

// The topics stored as paused, in key order. A value other than the version byte is damage:
// given to `on_damage` (the topic is then taken as running if that returns ok).
// Errors: corrupt (on_damage's), io_error.
Result<std::vector<std::string>> read_paused(Database& d,
                                             const std::function<Status(const Status&)>& on_damage);

}  // namespace delayq::wal
