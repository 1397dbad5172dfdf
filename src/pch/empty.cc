// The one source of the targets that compile the precompiled headers (CMakeLists.txt,
// DELAYQ_PCH): the other targets take their headers from these.
