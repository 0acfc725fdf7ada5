// A test-only SQLite VFS that simulates a power cut: it wraps the default ("unix") VFS,
// applies every write to the real file, and remembers, for every file, its size at its
// last xSync and the bytes each block held then (a block's pre-image, saved at the first
// write or truncation that touches it after the sync). cut() is the power going off:
// every file goes back to what its last xSync made durable, and every later write, sync,
// truncation or delete through this VFS fails (SQLITE_IOERR), as a machine without power
// writes nothing. The -shm file is shared memory, not data: it is left alone (SQLite
// rebuilds it from the WAL when the first connection opens the database again).
//
// What survives of an unsynced block is chosen per block, seeded: every block reverted
// (`keep_unsynced` 0, the strict model), or each block kept with that probability (a
// disk that wrote some of the cached blocks before the cut, in any order); a file that
// grew keeps a random number of its new blocks, and of those some may read as zeros
// (the size reached the disk, the data did not).
//
// The cut can be armed to happen at the n-th write or sync (a point in the middle of a
// load), or called directly. Thread-safe: one mutex serialises every write, sync,
// truncation and the cut, so a sync either finished before the cut (durable) or failed.
//
// Design: blocks of 512 bytes keyed by offset; pre-images are read from the file with a
// descriptor of the VFS's own (one per path, shared by every handle of that file, since
// an fsync through any descriptor makes the inode's writes durable).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

namespace inlet::store::test {

class powercut_vfs {
 public:
  /// Registers the VFS as SQLite's default (connections opened without a VFS name use it).
  powercut_vfs(std::uint64_t seed, double keep_unsynced);
  /// Makes the VFS it wrapped the default again and unregisters itself.
  ~powercut_vfs();
  powercut_vfs(const powercut_vfs&) = delete;
  powercut_vfs& operator=(const powercut_vfs&) = delete;

  /// The power goes off after `n` more writes and syncs (0: never by count).
  void arm(std::uint64_t n);
  /// The power goes off now (when it has not yet).
  void cut();
  bool is_cut() const;
  /// Writes and syncs seen so far (to choose a cut point inside a load).
  std::uint64_t operations() const;
  /// Syncs that returned SQLITE_OK before the cut.
  std::uint64_t syncs() const;

  struct state;

 private:
  state* s_;
};

}  // namespace inlet::store::test
