// ThreadSanitizer builds only (CMakeLists.txt adds this source to every program when
// DELAYQ_TSAN is on): std::string instantiated whole, compiled with TSan, in each program.
//
// RocksDB and libstdc++ come from Debian uninstrumented. When RocksDB appends to a string,
// libstdc++'s code runs, and any of its member functions that the program also defines (TSan-
// instrumented, and exported for the library to bind to) takes over: TSan then sees the copy and
// records who called it, RocksDB's frame included. Which members a program happened to define
// depended on what the compiler kept out of line: built as one unity source per target, the
// programs lost _M_append, RocksDB's appends ran uninstrumented up to _M_mutate, and the reports
// of RocksDB's write group (its leader copying a follower's batch, ordered by atomics inside
// librocksdb) came without the RocksDB frame that tests/tsan.supp suppresses them by: 16 reports
// in one run of scripts/tsan.sh, measured here on 2026-12-02, and none with this file in three
// runs of the store tests that showed about 5 each without it. Instantiating the class whole makes
// that the same in every build.
#include <string>

template class std::basic_string<char>;
