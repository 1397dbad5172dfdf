// A RocksDB environment for a process made by fork(): its background jobs (flushes and
// compactions) run on threads that this process starts.
//
// Why: fork() copies only the calling thread. RocksDB's default environment is one per process,
// and once the parent has opened a database its thread pools believe their threads exist; in
// the child they do not, so every flush or compaction the child schedules would wait forever
// (and writes stall once the memtables are full). Each worker of the crash harness runs its
// store on this environment; so do the driver's own stores, whose threads then end when they
// close, leaving the driver with no thread but its own when it forks (driver.h, DriverStore).
#pragma once

#include <cstddef>
#include <memory>

namespace rocksdb {
class Env;
}

namespace delayq::crash {

// `base` (not owned; must outlive the result) for everything but background jobs. With
// `run_jobs` false, background jobs are queued and never run: no flush or compaction happens
// (for tests that need a store whose memtables are never written to table files).
std::unique_ptr<rocksdb::Env> fork_safe_env(rocksdb::Env* base, bool run_jobs = true);

// The threads this process runs now (the entries of /proc/self/task), or 0 if it cannot tell.
size_t threads_in_process();

}  // namespace delayq::crash
