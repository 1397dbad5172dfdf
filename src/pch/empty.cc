// The one source of the target that compiles the precompiled header (CMakeLists.txt,
// DELAYQ_PCH): the other targets take its headers from it.
