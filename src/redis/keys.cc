// The keys of a queue (see keys.h).
#include "redis/keys.h"

#include <utility>

#include "redis/fnv1a.h"

namespace delayq::redis {

namespace {

// CRC16-CCITT as Redis Cluster uses it (XMODEM: polynomial 0x1021, initial value 0, no
// reflection), one bit at a time: keys are short, and a shard computes its slot once.
uint16_t crc16(std::string_view s) {
  uint16_t crc = 0;
  for (unsigned char c : s) {
    crc ^= static_cast<uint16_t>(c) << 8;
    for (int b = 0; b < 8; ++b)
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<uint16_t>(crc << 1);
  }
  return crc;
}

}  // namespace

uint16_t key_slot(std::string_view key) {
  if (const size_t open = key.find('{'); open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1)
      key = key.substr(open + 1, close - open - 1);
  }
  return crc16(key) & 16383;
}

void ShardKeys::add_topic(std::string_view topic, std::vector<std::string>& keys) const {
  for (const char* kind : {":d:", ":r:", ":l:", ":x:", ":q:"})
    keys.push_back(tag + kind + std::string(topic));
}

std::vector<std::string> ShardKeys::with_topic(std::string_view topic) const {
  std::vector<std::string> keys = base;
  add_topic(topic, keys);
  return keys;
}

KeyLayout::KeyLayout(std::string_view queue, uint32_t shards) {
  const std::string prefix = "{dq:" + std::string(queue) + ":";
  meta_ = prefix + "0}:meta";
  for (uint32_t s = 0; s < shards; ++s) {
    ShardKeys sh;
    sh.tag = prefix + std::to_string(s) + "}";
    sh.wake = sh.tag + ":wake";
    sh.topics = sh.tag + ":topics";
    sh.paused = sh.tag + ":paused";
    sh.limits = sh.tag + ":limits";
    for (const char* k :
         {":jobs", ":body", ":seq", ":fence", ":topics", ":stats", ":paused", ":emptied", ":limits",
          ":flow"})
      sh.base.push_back(sh.tag + k);
    sh.slot = key_slot(sh.tag);
    shards_.push_back(std::move(sh));
  }
}

size_t KeyLayout::shard_of(std::string_view id) const {
  return shards_.size() == 1 ? 0 : fnv1a32(id) % shards_.size();
}

}  // namespace delayq::redis
