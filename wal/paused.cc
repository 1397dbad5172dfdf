// The paused topics in the journal (paused.h).
#include "wal/paused.h"

#include "wal/codec.h"

namespace delayq::wal {

std::string paused_key(std::string_view topic) {
  return std::string(kPausedPrefix) + std::string(topic);
}

std::string encode_paused() {
  return std::string(1, static_cast<char>(kPausedVersion));
}

Result<std::vector<std::string>> read_paused(
    Database& d, const std::function<Status(const Status&)>& on_damage) {
  std::vector<std::string> out;
  const std::string lower = kPausedPrefix;
  std::string upper = lower;
  upper.back() = static_cast<char>(upper.back() + 1);  // the prefix's end: '/' + 1
  Status st = for_each_in(
      d, d.meta(), lower, upper, "reading the paused topics",
      [&](std::string_view k, std::string_view v) -> Result<bool> {
        const std::string_view topic = k.substr(lower.size());
        if (v.size() == 1 && static_cast<uint8_t>(v[0]) == kPausedVersion) {
          out.emplace_back(topic);
          return true;
        }
        const Status damage = store_damage(
            d,
            Status(Errc::corrupt, "the pause of topic '" + std::string(topic) +
                                      "' in family 'meta' is unreadable (bytes: " + hex(v) + ")"));
        if (Status s = on_damage ? on_damage(damage) : damage; !s.ok()) return s;
        return true;
      });
  if (!st.ok()) return st;
  return out;
}

}  // namespace delayq::wal
