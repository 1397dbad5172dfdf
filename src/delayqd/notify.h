// systemd's readiness protocol (sd_notify), written directly with a socket: when the service
// manager set NOTIFY_SOCKET, delayqd sends "READY=1" once it listens on its open queue (a unit
// with Type=notify counts it as started then, not at exec) and "STOPPING=1" when it begins to
// drain. Without NOTIFY_SOCKET nothing is sent. No libsystemd.
#pragma once

#include <string>
#include <string_view>

namespace delayq::http {

// Sends `state` ("READY=1") as one datagram to the unix socket named by NOTIFY_SOCKET: a path,
// or an abstract socket when it starts with '@'. Returns "" when it was sent or NOTIFY_SOCKET is
// not set, else what went wrong (for a warning: delayqd goes on serving either way).
std::string notify_service_manager(std::string_view state);

}  // namespace delayq::http
