// The version of this build (see version.h); DELAYQ_VERSION is set by src/wire/CMakeLists.txt.
#include "wire/version.h"

namespace delayq::wire {

std::string_view version() noexcept {
  return DELAYQ_VERSION;
}

}  // namespace delayq::wire
