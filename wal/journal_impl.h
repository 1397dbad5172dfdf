// Journal::Impl: what a journal holds, shared by its write side (journal.cc) and its reads
// (journal_reads.cc). Private to wal/.
#pragma once

#include <memory>
#include <string>

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/status.h>

#include "wal/commit_pipeline.h"
#include "wal/database.h"
#include "wal/journal.h"
#include "wal/open_db.h"

namespace delayq::wal {

struct Journal::Impl {
  JournalOptions options;
  std::unique_ptr<Database> database;
  std::unique_ptr<CommitSink> sink;          // the database, as the pipeline writes it
  std::unique_ptr<CommitPipeline> pipeline;  // none when read-only

  ~Impl() {
    if (!pipeline) return;
    pipeline->close();
    if (pipeline->status().ok()) database->flush();  // a clean close
  }

  const std::string& dir() const { return database->dir(); }

  // Damage found in the store (`msg`): corrupt, or with tolerant reported (with what follows
  // from it, `consequence`) and passed over.
  Status damaged(const std::string& msg, const std::string& consequence = {}) {
    return damaged_as_said("store " + dir() + ": " + msg, consequence);
  }
  // The same for a message that names the store already.
  Status damaged_as_said(const std::string& msg, const std::string& consequence) {
    if (!options.tolerant) return Status(Errc::corrupt, msg);
    if (options.on_skip) options.on_skip(msg + consequence);
    return Status();
  }

  // meta/`key` read with `decode`; T{} when it is absent, or damaged and passed over.
  template <class T>
  Result<T> read_meta(const char* key, Result<T> (*decode)(std::string_view), const char* what,
                      const std::string& consequence) {
    std::string value;
    rocksdb::Status s = database->db().Get(rocksdb::ReadOptions(), database->meta(), key, &value);
    if (s.IsNotFound()) return T{};
    if (!s.ok()) return from_rocksdb(s, dir(), std::string("reading the ") + what);
    Result<T> r = decode(value);
    if (r.ok()) return r;
    if (Status st = damaged(r.status().message(), consequence); !st.ok()) return st;
    return T{};
  }
};

}  // namespace delayq::wal
