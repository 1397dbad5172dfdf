// The fault-injecting RocksDB file system (fault_fs.h).
#include "fault_fs.h"

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <chrono>
#include <filesystem>

#include "writable_file_fs.h"

namespace delayq::faults {

using rocksdb::FSWritableFile;
using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;
using rocksdb::Slice;

const char* to_string(Op op) {
  return op == Op::append ? "append" : "sync";
}
const char* to_string(Fault fault) {
  return fault == Fault::no_space ? "ENOSPC" : "EIO";
}

void FaultControl::fail_after(Op op, Fault fault, uint64_t ok_first) {
  std::lock_guard l(mu_);
  armed_ = true;
  op_ = op;
  fault_ = fault;
  ok_left_ = ok_first;
  hold_ = false;
}

void FaultControl::hold_then_fail(Op op, Fault fault) {
  std::lock_guard l(mu_);
  armed_ = true;
  op_ = op;
  fault_ = fault;
  ok_left_ = 0;
  hold_ = true;
  holding_ = released_ = false;
}

bool FaultControl::held() {
  std::unique_lock l(mu_);
  return cv_.wait_for(l, std::chrono::seconds(30), [this] { return holding_; });
}

void FaultControl::release() {
  std::lock_guard l(mu_);
  released_ = true;
  cv_.notify_all();
}

void FaultControl::clear() {
  std::lock_guard l(mu_);
  armed_ = hold_ = false;
  released_ = true;  // nothing may stay held
  cv_.notify_all();
}

uint64_t FaultControl::failures() const {
  std::lock_guard l(mu_);
  return failures_;
}

uint64_t FaultControl::passed(Op op) const {
  std::lock_guard l(mu_);
  return passed_[static_cast<int>(op)];
}

IOStatus FaultControl::check(Op op, const std::string& path) {
  std::unique_lock l(mu_);
  if (!armed_ || op != op_ || ok_left_ > 0) {
    if (armed_ && op == op_) --ok_left_;
    ++passed_[static_cast<int>(op)];
    return IOStatus::OK();
  }
  if (hold_) {
    hold_ = false;
    holding_ = true;
    cv_.notify_all();
    cv_.wait(l, [this] { return released_; });
    holding_ = false;
    if (!armed_) {  // cleared while held
      ++passed_[static_cast<int>(op)];
      return IOStatus::OK();
    }
  }
  ++failures_;
  const std::string what = std::string("injected ") + to_string(fault_) + " on " + to_string(op) +
                           " of " + std::filesystem::path(path).filename().string();
  return fault_ == Fault::no_space ? IOStatus::NoSpace(what) : IOStatus::IOError(what);
}

namespace {

// RocksDB's write-ahead logs are NNNNNN.log; its info log is LOG, and LOG.old.* after a roll.
bool is_wal(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  return name.size() > 4 && name.ends_with(".log") && name[0] >= '0' && name[0] <= '9';
}

class FaultyFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FaultyFile(std::unique_ptr<FSWritableFile> target, std::shared_ptr<FaultControl> control,
             std::string path)
      : FSWritableFileOwnerWrapper(std::move(target)),
        control_(std::move(control)),
        path_(std::move(path)) {}

  // An append that fails writes nothing; a sync that fails comes after its bytes were written.
  IOStatus Append(const Slice& data, const IOOptions& o, IODebugContext* dbg) override {
    IOStatus s = control_->check(Op::append, path_);
    return s.ok() ? target()->Append(data, o, dbg) : s;
  }
  IOStatus Append(const Slice& data, const IOOptions& o, const rocksdb::DataVerificationInfo& info,
                  IODebugContext* dbg) override {
    IOStatus s = control_->check(Op::append, path_);
    return s.ok() ? target()->Append(data, o, info, dbg) : s;
  }
  IOStatus PositionedAppend(const Slice& data, uint64_t offset, const IOOptions& o,
                            IODebugContext* dbg) override {
    IOStatus s = control_->check(Op::append, path_);
    return s.ok() ? target()->PositionedAppend(data, offset, o, dbg) : s;
  }
  IOStatus PositionedAppend(const Slice& data, uint64_t offset, const IOOptions& o,
                            const rocksdb::DataVerificationInfo& info,
                            IODebugContext* dbg) override {
    IOStatus s = control_->check(Op::append, path_);
    return s.ok() ? target()->PositionedAppend(data, offset, o, info, dbg) : s;
  }
  IOStatus Sync(const IOOptions& o, IODebugContext* dbg) override {
    IOStatus s = target()->Sync(o, dbg);
    return s.ok() ? control_->check(Op::sync, path_) : s;
  }
  IOStatus Fsync(const IOOptions& o, IODebugContext* dbg) override {
    IOStatus s = target()->Fsync(o, dbg);
    return s.ok() ? control_->check(Op::sync, path_) : s;
  }

 private:
  std::shared_ptr<FaultControl> control_;
  const std::string path_;
};

class FaultyFileSystem final : public testing::WritableFileWrappingFs {
 public:
  explicit FaultyFileSystem(std::shared_ptr<FaultControl> control) : control_(std::move(control)) {}

  const char* Name() const override { return "DelayqFaultyFileSystem"; }

 private:
  IOStatus wrap(const std::string& path, std::unique_ptr<FSWritableFile>* out, bool) override {
    if (is_wal(path)) *out = std::make_unique<FaultyFile>(std::move(*out), control_, path);
    return IOStatus::OK();
  }

  std::shared_ptr<FaultControl> control_;
};

}  // namespace

std::unique_ptr<rocksdb::Env> fault_env(std::shared_ptr<FaultControl> control) {
  return rocksdb::NewCompositeEnv(std::make_shared<FaultyFileSystem>(std::move(control)));
}

}  // namespace delayq::faults
