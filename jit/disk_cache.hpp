// A directory of compiled kernels, shared by processes: one file per key.
// Backend-neutral (the host JIT stores object files in it).
//
// File format: "AJKC1\n", then u64 key length, the key, u64 payload length,
// u64 checksum (FNV-1a 64 of the payload), the payload. An entry is used only
// if all of it is there and matches: a truncated, corrupt or stale file (an
// other key that hashed to the same file name, an other LLVM or CPU: both are
// in the key) reads as a miss and is overwritten by the next store. So does
// anything at the entry's path that is not a regular file (a FIFO, a device,
// a directory): it is refused without blocking and without being read. The
// key is compared in full, so an entry copied under another key's file name
// is refused too. The header is checked before the payload is read, and a
// file larger than kMaxEntryBytes is refused without reading it. Writes go to
// a temporary file renamed into place, so readers never see half a file.
//
// The directory must be this user's and writable by no one else (else it is
// not used, said once on stderr): whoever can write it can make every process
// that uses it run their code, checksums or not (docs/semantics.md, "The
// kernel cache on disk"). A directory the cache makes is mode 0700.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace aj::jit {

// $AJ_CACHE_DIR if set ("" or "off" disables the disk cache), else
// $XDG_CACHE_HOME/arrayjit, else $HOME/.cache/arrayjit, else
// /tmp/arrayjit-<uid>.
std::string default_cache_dir();

std::uint64_t fnv1a64(std::string_view data);

enum class DiskRead { hit, missing, corrupt };

class DiskCache {
 public:
  // No kernel object comes near this (they are kilobytes).
  static constexpr std::uint64_t kMaxEntryBytes = std::uint64_t{64} << 20;
  explicit DiskCache(std::string dir) : dir_(std::move(dir)) {}
  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  std::string path_for(std::string_view key) const;  // the file an entry lives in

  DiskRead read(std::string_view key, std::string* payload) const;
  // Best effort: a cache that cannot be written is only slower. Returns false
  // (and leaves no file behind) on failure.
  bool write(std::string_view key, std::string_view payload) const;
  // Keep at most max_entries: beyond that, the least recently written half
  // goes (the disk cache has a limit, like the in-memory one).
  void trim(std::size_t max_entries) const;

 private:
  std::string dir_;
};

}  // namespace aj::jit
