// The keys of a queue in Redis, and the cluster hash slot of a key.
#pragma once

#include <cstdint>
#include <string_view>

namespace delayq::redis {

// The hash slot of a key, as Redis Cluster computes it: CRC16 (XMODEM) of the key's hash tag
// (the bytes between the first '{' and the next '}', when not empty) or of the whole key,
// modulo 16384.
uint16_t key_slot(std::string_view key);

}  // namespace delayq::redis
