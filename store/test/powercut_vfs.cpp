#include "powercut_vfs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>

namespace inlet::store::test {

namespace {

constexpr std::int64_t block = 512;

// One path's durable state: its size at the last sync and each changed block's bytes then.
struct tracked {
  int fd = -1;
  int handles = 0;
  std::int64_t synced_size = 0;
  std::map<std::int64_t, std::string> pre;  // block number -> bytes at the last sync
};

std::int64_t size_of(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? static_cast<std::int64_t>(st.st_size) : 0;
}

void write_all(int fd, const char* p, std::size_t n, std::int64_t off) {
  while (n > 0) {
    const auto w = ::pwrite(fd, p, n, off);
    if (w <= 0) throw std::runtime_error("powercut_vfs: pwrite failed");
    p += w;
    n -= static_cast<std::size_t>(w);
    off += w;
  }
}

}  // namespace

struct powercut_vfs::state {
  sqlite3_vfs vfs{};
  sqlite3_vfs* real = nullptr;
  std::mutex mu;
  std::map<std::string, tracked> files;
  bool cut = false;
  std::uint64_t ops = 0, cut_at = 0, syncs = 0;
  std::mt19937_64 rng;
  double keep = 0;

  // Saves the pre-images of the blocks [off, off+len) touches below the synced size.
  void save(tracked& t, std::int64_t off, std::int64_t len) {
    if (len <= 0) return;
    for (std::int64_t b = off / block; b <= (off + len - 1) / block; ++b) {
      const std::int64_t start = b * block;
      if (start >= t.synced_size) break;
      if (t.pre.contains(b)) continue;
      std::string bytes(static_cast<std::size_t>(std::min(block, t.synced_size - start)), '\0');
      const auto r = ::pread(t.fd, bytes.data(), bytes.size(), start);
      if (r < 0) throw std::runtime_error("powercut_vfs: pread failed");
      t.pre.emplace(b, std::move(bytes));  // a short read: the rest was zeros on disk
    }
  }

  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }

  // The power goes off: every tracked file back to what its syncs made durable (the
  // strict model), or a seeded part of its unsynced blocks kept.
  void power_off() {
    cut = true;
    for (auto& [path, t] : files) {
      if (t.fd < 0) continue;
      const std::int64_t cur = size_of(t.fd);
      std::int64_t new_size = t.synced_size;
      if (keep > 0 && cur > t.synced_size) {
        const std::int64_t grown = (cur - t.synced_size + block - 1) / block;
        const auto kept = std::uniform_int_distribution<std::int64_t>(0, grown)(rng);
        new_size = std::min(cur, t.synced_size + kept * block);
        const std::string zeros(static_cast<std::size_t>(block), '\0');
        for (std::int64_t off = t.synced_size; off < new_size; off += block)
          if (chance((1 - keep) / 2))
            write_all(t.fd, zeros.data(), static_cast<std::size_t>(std::min(block, new_size - off)), off);
      } else if (keep > 0 && cur < t.synced_size && chance(keep)) {
        new_size = cur;  // the truncation reached the disk
      }
      if (::ftruncate(t.fd, new_size) != 0) throw std::runtime_error("powercut_vfs: ftruncate failed");
      for (const auto& [b, bytes] : t.pre) {
        if (b * block >= new_size) continue;
        if (keep > 0 && chance(keep)) continue;  // this block reached the disk
        write_all(t.fd, bytes.data(), static_cast<std::size_t>(std::min<std::int64_t>(
                                          static_cast<std::int64_t>(bytes.size()), new_size - b * block)),
                  b * block);
      }
      t.pre.clear();
      t.synced_size = new_size;
    }
  }

  // Counts one write or sync; false when the power is (or just went) off.
  bool tick() {
    if (cut) return false;
    ++ops;
    if (cut_at != 0 && ops >= cut_at) {
      power_off();
      return false;
    }
    return true;
  }
};

namespace {

using state = powercut_vfs::state;

struct alignas(8) shim_file {
  sqlite3_file base;
  state* s;
  tracked* t;
  sqlite3_file* real() { return reinterpret_cast<sqlite3_file*>(this + 1); }
};

shim_file* shim(sqlite3_file* f) { return reinterpret_cast<shim_file*>(f); }
sqlite3_file* real(sqlite3_file* f) { return shim(f)->real(); }

int x_close(sqlite3_file* f) {
  auto* sf = shim(f);
  const int rc = sf->real()->pMethods->xClose(sf->real());
  if (sf->t) {
    std::lock_guard lk(sf->s->mu);
    --sf->t->handles;
  }
  return rc;
}
int x_read(sqlite3_file* f, void* p, int n, sqlite3_int64 off) {
  return real(f)->pMethods->xRead(real(f), p, n, off);
}
int x_write(sqlite3_file* f, const void* p, int n, sqlite3_int64 off) {
  auto* sf = shim(f);
  std::lock_guard lk(sf->s->mu);
  if (!sf->s->tick()) return SQLITE_IOERR_WRITE;
  if (sf->t) sf->s->save(*sf->t, off, n);
  return sf->real()->pMethods->xWrite(sf->real(), p, n, off);
}
int x_truncate(sqlite3_file* f, sqlite3_int64 size) {
  auto* sf = shim(f);
  std::lock_guard lk(sf->s->mu);
  if (!sf->s->tick()) return SQLITE_IOERR_TRUNCATE;
  if (sf->t) {
    const auto cur = size_of(sf->t->fd);
    if (size < cur) sf->s->save(*sf->t, size, cur - size);
  }
  return sf->real()->pMethods->xTruncate(sf->real(), size);
}
int x_sync(sqlite3_file* f, int flags) {
  auto* sf = shim(f);
  std::lock_guard lk(sf->s->mu);
  if (!sf->s->tick()) return SQLITE_IOERR_FSYNC;
  const int rc = sf->real()->pMethods->xSync(sf->real(), flags);
  if (rc == SQLITE_OK && sf->t) {
    sf->t->pre.clear();
    sf->t->synced_size = size_of(sf->t->fd);
    ++sf->s->syncs;
  }
  return rc;
}
int x_file_size(sqlite3_file* f, sqlite3_int64* out) { return real(f)->pMethods->xFileSize(real(f), out); }
int x_lock(sqlite3_file* f, int l) { return real(f)->pMethods->xLock(real(f), l); }
int x_unlock(sqlite3_file* f, int l) { return real(f)->pMethods->xUnlock(real(f), l); }
int x_check_reserved(sqlite3_file* f, int* out) {
  return real(f)->pMethods->xCheckReservedLock(real(f), out);
}
int x_file_control(sqlite3_file* f, int op, void* arg) {
  return real(f)->pMethods->xFileControl(real(f), op, arg);
}
int x_sector_size(sqlite3_file* f) { return real(f)->pMethods->xSectorSize(real(f)); }
int x_device(sqlite3_file* f) { return real(f)->pMethods->xDeviceCharacteristics(real(f)); }
int x_shm_map(sqlite3_file* f, int pg, int sz, int extend, void volatile** out) {
  return real(f)->pMethods->xShmMap(real(f), pg, sz, extend, out);
}
int x_shm_lock(sqlite3_file* f, int off, int n, int flags) {
  return real(f)->pMethods->xShmLock(real(f), off, n, flags);
}
void x_shm_barrier(sqlite3_file* f) { real(f)->pMethods->xShmBarrier(real(f)); }
int x_shm_unmap(sqlite3_file* f, int del) { return real(f)->pMethods->xShmUnmap(real(f), del); }
int x_fetch(sqlite3_file* f, sqlite3_int64 off, int n, void** out) {
  return real(f)->pMethods->xFetch(real(f), off, n, out);
}
int x_unfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  return real(f)->pMethods->xUnfetch(real(f), off, p);
}

const sqlite3_io_methods shim_methods = {
    3,           x_close,      x_read,          x_write,     x_truncate,       x_sync,
    x_file_size, x_lock,       x_unlock,        x_check_reserved, x_file_control, x_sector_size,
    x_device,    x_shm_map,    x_shm_lock,      x_shm_barrier, x_shm_unmap,   x_fetch,
    x_unfetch};

state* state_of(sqlite3_vfs* v) { return static_cast<state*>(v->pAppData); }

int v_open(sqlite3_vfs* v, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  auto* s = state_of(v);
  auto* sf = shim(f);
  sf->base.pMethods = nullptr;
  sf->s = s;
  sf->t = nullptr;
  const int rc = s->real->xOpen(s->real, name, sf->real(), flags, out_flags);
  if (rc != SQLITE_OK) return rc;
  // The files whose contents a power cut decides: the database, its WAL, its journal.
  if (name && (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL))) {
    std::lock_guard lk(s->mu);
    auto& t = s->files[name];
    if (t.fd < 0) {
      t.fd = ::open(name, O_RDWR | O_CLOEXEC);
      // What is there when the VFS first sees a file counts as durable.
      t.synced_size = t.fd >= 0 ? size_of(t.fd) : 0;
    }
    if (t.fd >= 0) {
      ++t.handles;
      sf->t = &t;
    }
  }
  sf->base.pMethods = &shim_methods;
  return SQLITE_OK;
}

int v_delete(sqlite3_vfs* v, const char* name, int sync_dir) {
  auto* s = state_of(v);
  std::lock_guard lk(s->mu);
  if (s->cut) return SQLITE_IOERR_DELETE;
  if (auto it = s->files.find(name); it != s->files.end() && it->second.handles == 0) {
    ::close(it->second.fd);
    s->files.erase(it);
  }
  return s->real->xDelete(s->real, name, sync_dir);
}
int v_access(sqlite3_vfs* v, const char* name, int flags, int* out) {
  return state_of(v)->real->xAccess(state_of(v)->real, name, flags, out);
}
int v_full_pathname(sqlite3_vfs* v, const char* name, int n, char* out) {
  return state_of(v)->real->xFullPathname(state_of(v)->real, name, n, out);
}
void* v_dlopen(sqlite3_vfs* v, const char* name) { return state_of(v)->real->xDlOpen(state_of(v)->real, name); }
void v_dlerror(sqlite3_vfs* v, int n, char* out) { state_of(v)->real->xDlError(state_of(v)->real, n, out); }
void (*v_dlsym(sqlite3_vfs* v, void* h, const char* sym))(void) {
  return state_of(v)->real->xDlSym(state_of(v)->real, h, sym);
}
void v_dlclose(sqlite3_vfs* v, void* h) { state_of(v)->real->xDlClose(state_of(v)->real, h); }
int v_randomness(sqlite3_vfs* v, int n, char* out) {
  return state_of(v)->real->xRandomness(state_of(v)->real, n, out);
}
int v_sleep(sqlite3_vfs* v, int us) { return state_of(v)->real->xSleep(state_of(v)->real, us); }
int v_current_time(sqlite3_vfs* v, double* out) {
  return state_of(v)->real->xCurrentTime(state_of(v)->real, out);
}
int v_last_error(sqlite3_vfs* v, int n, char* out) {
  return state_of(v)->real->xGetLastError(state_of(v)->real, n, out);
}
int v_current_time64(sqlite3_vfs* v, sqlite3_int64* out) {
  return state_of(v)->real->xCurrentTimeInt64(state_of(v)->real, out);
}

}  // namespace

powercut_vfs::powercut_vfs(std::uint64_t seed, double keep_unsynced) : s_(new state) {
  s_->rng.seed(seed);
  s_->keep = keep_unsynced;
  s_->real = sqlite3_vfs_find(nullptr);
  if (!s_->real || s_->real->iVersion < 2) throw std::runtime_error("powercut_vfs: no default VFS");
  auto& v = s_->vfs;
  v.iVersion = 2;
  v.szOsFile = static_cast<int>(sizeof(shim_file)) + s_->real->szOsFile;
  v.mxPathname = s_->real->mxPathname;
  v.zName = "inlet_powercut";
  v.pAppData = s_;
  v.xOpen = v_open;
  v.xDelete = v_delete;
  v.xAccess = v_access;
  v.xFullPathname = v_full_pathname;
  v.xDlOpen = v_dlopen;
  v.xDlError = v_dlerror;
  v.xDlSym = v_dlsym;
  v.xDlClose = v_dlclose;
  v.xRandomness = v_randomness;
  v.xSleep = v_sleep;
  v.xCurrentTime = v_current_time;
  v.xGetLastError = v_last_error;
  v.xCurrentTimeInt64 = v_current_time64;
  if (sqlite3_vfs_register(&v, 1) != SQLITE_OK) throw std::runtime_error("powercut_vfs: register failed");
}

powercut_vfs::~powercut_vfs() {
  sqlite3_vfs_register(s_->real, 1);
  sqlite3_vfs_unregister(&s_->vfs);
  for (auto& [path, t] : s_->files)
    if (t.fd >= 0) ::close(t.fd);
  delete s_;
}

void powercut_vfs::arm(std::uint64_t n) {
  std::lock_guard lk(s_->mu);
  s_->cut_at = n ? s_->ops + n : 0;
}

void powercut_vfs::cut() {
  std::lock_guard lk(s_->mu);
  if (!s_->cut) s_->power_off();
}

bool powercut_vfs::is_cut() const {
  std::lock_guard lk(s_->mu);
  return s_->cut;
}

std::uint64_t powercut_vfs::operations() const {
  std::lock_guard lk(s_->mu);
  return s_->ops;
}

std::uint64_t powercut_vfs::syncs() const {
  std::lock_guard lk(s_->mu);
  return s_->syncs;
}

}  // namespace inlet::store::test
