// bad(): the Status every check of user input returns, invalid_argument with the reason, defined
// once for the libraries (each file used to define its own, and the copies clashed when several
// files are compiled as one in a unity build).
#pragma once

#include <string>
#include <utility>

#include "delayq/error.h"

namespace delayq {

inline Status bad(std::string why) { return Status(Errc::invalid_argument, std::move(why)); }

}  // namespace delayq
