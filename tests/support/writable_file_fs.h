// The default RocksDB file system with every writable file it opens (new, reopened or reused)
// handed to wrap(): the base of the test file systems that watch or disturb writes
// (fault_fs.cc, power_loss_fs.cc).
#pragma once

#include <rocksdb/file_system.h>

#include <memory>
#include <string>

namespace delayq::testing {

class WritableFileWrappingFs : public rocksdb::FileSystemWrapper {
 public:
  WritableFileWrappingFs() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}

  rocksdb::IOStatus NewWritableFile(const std::string& path, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* out,
                                    rocksdb::IODebugContext* dbg) override {
    return opened(path, target()->NewWritableFile(path, o, out, dbg), out, /*fresh=*/true);
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& path, const rocksdb::FileOptions& o,
                                       std::unique_ptr<rocksdb::FSWritableFile>* out,
                                       rocksdb::IODebugContext* dbg) override {
    return opened(path, target()->ReopenWritableFile(path, o, out, dbg), out, /*fresh=*/false);
  }
  // WAL recycling (off in delayq's options): the old log is renamed and overwritten from the
  // start, so it counts as a fresh file.
  rocksdb::IOStatus ReuseWritableFile(const std::string& path, const std::string& old_path,
                                      const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSWritableFile>* out,
                                      rocksdb::IODebugContext* dbg) override {
    return opened(path, target()->ReuseWritableFile(path, old_path, o, out, dbg), out,
                  /*fresh=*/true);
  }

 protected:
  // `*out` is the file just opened at `path`: replaced by a wrapper around it, or left. `fresh`:
  // written from its start (created, or reused); false: reopened, appended to what it holds.
  // An error is the open's.
  virtual rocksdb::IOStatus wrap(const std::string& path,
                                 std::unique_ptr<rocksdb::FSWritableFile>* out, bool fresh) = 0;

 private:
  rocksdb::IOStatus opened(const std::string& path, rocksdb::IOStatus s,
                           std::unique_ptr<rocksdb::FSWritableFile>* out, bool fresh) {
    return s.ok() ? wrap(path, out, fresh) : s;
  }
};

}  // namespace delayq::testing
