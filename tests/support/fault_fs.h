// I/O faults on command, for the fault tests of the durable store: a RocksDB file system on the
// real one whose write-ahead log files (NNNNNN.log) fail appends or syncs with ENOSPC or EIO
// when a test says so. Everything else goes to the real file system unchanged, so a store the
// faults stopped can be reopened on the default environment and checked.
//
// What a fault does, as a real one would leave it:
//  - an append fails before anything of it reaches the file (a full disk refusing the write);
//  - a sync fails after the bytes were handed to the file: they may be read back after a
//    reopen, as after a real fsync error the kernel may still have them (or may not).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace rocksdb {
class Env;
class IOStatus;
}  // namespace rocksdb

namespace delayq::faults {

enum class Op : uint8_t { append, sync };           // sync: Sync and Fsync of a log file
enum class Fault : uint8_t { no_space, io_error };  // ENOSPC, EIO
const char* to_string(Op op);
const char* to_string(Fault fault);

// What fails, and when. Thread-safe: RocksDB's threads consult it while the test changes it.
class FaultControl {
 public:
  // After `ok_first` more successful log operations of kind `op`, every later one fails with
  // `fault`, until clear().
  void fail_after(Op op, Fault fault, uint64_t ok_first);
  // The next log operation of kind `op` waits until release(), then fails with `fault`, and so
  // does every later one until clear(). held() tells when an operation is waiting.
  void hold_then_fail(Op op, Fault fault);
  bool held();  // waits up to 30 s for an operation to be held
  void release();
  void clear();
  uint64_t failures() const;     // operations failed so far
  uint64_t passed(Op op) const;  // log operations of this kind that went ahead so far

  // The file system's side: the status the operation `op` on a log file must return (OK to go
  // ahead). May block (hold_then_fail).
  rocksdb::IOStatus check(Op op, const std::string& path);

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false;
  Op op_ = Op::append;
  Fault fault_ = Fault::io_error;
  uint64_t ok_left_ = 0;
  bool hold_ = false;     // the next matching operation waits for release()
  bool holding_ = false;  // one is waiting now
  bool released_ = false;
  uint64_t failures_ = 0;
  uint64_t passed_[2] = {0, 0};
};

// A RocksDB environment (threads and clock of the default one) whose file system consults
// `control` on every append to and sync of a write-ahead log file.
std::unique_ptr<rocksdb::Env> fault_env(std::shared_ptr<FaultControl> control);

}  // namespace delayq::faults
