// The embedded durable message store: one SQLite file (inletd --database FILE).
//
//   inlet::store::file_store_config cfg;
//   cfg.path = "/var/lib/inlet/mail.db";
//   inlet::store::file_store store(cfg);   // opens, checks and migrates; throws on a bad file
//   store.put(std::move(msg), [](std::error_code ec, message_ptr m) { ... });
//
// Acknowledgement: put's handler succeeds only after the transaction holding the message
// committed with synchronous=FULL (the commit's fsync returned). Concurrent puts share one
// transaction (group commit on the store's writer thread, bounded by max_batch_messages
// and max_batch_bytes; max_batch_wait to wait for more). Changes (flags, tags, deletes)
// go through the same writer; reads run on the store's reader threads, each with its own
// connection (WAL: readers never wait for the writer).
//
// Opening never turns a bad file into an empty store: a file that is not SQLite, a
// truncated or damaged one (PRAGMA quick_check), or a SQLite database of another
// application makes the constructor throw file_store_error (errc::foreign_file or
// errc::corrupt, and a message naming the file and the fault) before anything is
// written to it.
//
// Search: the same language and results as the memory store (search::matches is the
// reference; the terms compile to SQL over columns folded at insert).
//
// Thread-safety: every member may be called from any thread. Handlers of reads run on
// their associated executor (inline on a reader thread when they have none); put
// handlers and event observers run on the writer thread.
// Design: store/src/file/DESIGN.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>

#include "inlet/store/store.hpp"

namespace inlet::store {

struct file_store_config {
  std::string path;  ///< the database file (created when missing)
  /// WAL journal (default). Off: a rollback journal, for network filesystems where
  /// WAL's shared memory does not work (readers and the writer then wait for each other).
  bool wal = true;
  /// Raw bytes: 0 stored as they are, 1-3 zstd (fastest, default, best), as Mailpit.
  int compression = 1;
  /// Non-empty: this tenant's tables (name prefix) in a file several tenants share.
  std::string tenant_id;
  /// Give freed pages back to the filesystem as messages are deleted (incremental
  /// vacuum). Applies to files created with it; a file keeps the mode it was made with.
  bool auto_vacuum = true;
  std::size_t max_messages = 0;    ///< oldest deleted past this many; 0: no cap
  std::chrono::seconds max_age{0};  ///< deleted when older (by received time); 0: kept
  /// PRAGMA quick_check on open (reads the whole file once; off for huge files).
  bool check_on_open = true;
  unsigned reader_threads = 2;

  // ---- importing a Mailpit database ----
  /// A file holding Mailpit's tables (of this tenant) is imported once, at open, in one
  /// transaction: IDs, received times, read flags and tags kept; Mailpit's tables stay.
  /// This builds each imported message's summary from its raw bytes (inletd passes its
  /// MIME analysis); without it the summary comes from Mailpit's columns (addresses,
  /// subject, Message-ID, snippet; attachment names and the Date header unknown). With
  /// it the search text is derived from the raw bytes (search::search_text_of), as for a
  /// message put; without it, Mailpit's own search text is kept (folded).
  std::function<void(std::string_view raw, summary& out)> summarize;

  // ---- group commit ----
  std::size_t max_batch_messages = 256;    ///< jobs per transaction
  std::size_t max_batch_bytes = 8u << 20;  ///< raw bytes (compressed) per transaction
  /// Wait this long for more jobs before committing a batch that is not full (0: commit
  /// at once; batches then form while the previous commit's fsync runs).
  std::chrono::microseconds max_batch_wait{0};
};

/// Why a file was refused at open: code() is errc::foreign_file, errc::corrupt or
/// errc::unavailable (cannot open or create it); what() names the file and the fault.
class file_store_error : public std::runtime_error {
 public:
  file_store_error(std::error_code ec, const std::string& what)
      : std::runtime_error(what), code_(ec) {}
  std::error_code code() const noexcept { return code_; }

 private:
  std::error_code code_;
};

class file_store final : public store {
 public:
  /// Opens or creates cfg.path; throws file_store_error (see above) or
  /// std::invalid_argument (compression outside 0-3).
  explicit file_store(file_store_config cfg);
  ~file_store() override;  ///< finishes queued writes, then closes
  file_store(const file_store&) = delete;
  file_store& operator=(const file_store&) = delete;

  void put(new_message msg, put_handler done) override;
  store_stats stats() const override;
  store_health health() const override;
  std::uint64_t subscribe(event_observer observer) override;
  void unsubscribe(std::uint64_t handle) override;

  const file_store_config& config() const noexcept;

  /// Deletes every message received before `cutoff` (the max_age sweep's step); blocks
  /// until committed. Returns how many went. Never call it from a store thread.
  std::size_t expire(time_point cutoff);

  /// Group-commit counters: transactions committed and jobs they carried; WAL syncs
  /// (each covers every batch committed since the one before; 0 without WAL).
  struct batch_stats {
    std::uint64_t batches = 0, jobs = 0, max_jobs = 0, syncs = 0;
  };
  batch_stats batches() const;

  /// Rebuilding what the store derives from a message's raw bytes (Mailpit's `reindex`):
  /// the summary, the folded search fields and search text, the size, the attachment and
  /// inline counts, the folded tags. IDs, received times, read flags, tags and envelopes
  /// are kept (an envelope whose summary row no longer decodes is rebuilt from the
  /// mailbox column: recipients kept, the sender from the From header).
  struct reindex_options {
    /// Required: the summary of a raw message (inletd passes its MIME analysis).
    std::function<void(std::string_view raw, const envelope& env, summary& out)> summarize;
    /// Messages per transaction: a running server's writes wait at most one batch.
    std::size_t batch_messages = 200;
    /// Called after each committed batch with the count so far.
    std::function<void(std::size_t)> progress;
  };
  struct reindex_result {
    std::size_t reindexed = 0;
    std::size_t failed = 0;  ///< rows whose raw bytes do not decode (left as they were)
  };
  /// Runs batch after batch (oldest first) through the writer; blocks until the last is
  /// committed. Throws std::invalid_argument without `summarize`, file_store_error when
  /// the file cannot be read. Never call it from a store thread.
  reindex_result reindex(const reindex_options& opt);

 protected:
  void do_list(list_request req, handler<void(std::error_code, page)> h) override;
  void do_get(std::string id, handler<void(std::error_code, message_ptr)> h) override;
  void do_remove(selection which, handler<void(std::error_code, std::size_t)> h) override;
  void do_set_read(selection which, bool read,
                   handler<void(std::error_code, std::size_t)> h) override;
  void do_set_tags(selection which, std::vector<std::string> tags,
                   handler<void(std::error_code, std::size_t)> h) override;
  void do_list_tags(handler<void(std::error_code, std::vector<std::string>)> h) override;
  void do_rename_tag(std::string from, std::string to,
                     handler<void(std::error_code, std::size_t)> h) override;
  void do_delete_tag(std::string tag, handler<void(std::error_code, std::size_t)> h) override;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Every message of a database file, oldest first, without writing to the file and
/// without a running server (`inletd dump --database`): inlet's tables of cfg.tenant_id,
/// or Mailpit's tables when inlet never imported them (a Mailpit database as Mailpit left
/// it). `each` gets the message's ID and raw bytes. Throws file_store_error (a file that
/// is missing, not SQLite, damaged, or holds neither store's tables).
void read_raw_messages(const file_store_config& cfg,
                       const std::function<void(std::string_view id, std::string_view raw)>& each);

}  // namespace inlet::store
