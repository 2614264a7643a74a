#include "jit/disk_cache.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace aj::jit {

namespace {
constexpr char kMagic[] = "AJKC1\n";
constexpr std::size_t kMagicLen = sizeof kMagic - 1;

void put_u64(std::string& s, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
bool get_u64(std::string_view& s, std::uint64_t* v) {
  if (s.size() < 8) return false;
  *v = 0;
  for (int i = 0; i < 8; ++i) *v |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[static_cast<std::size_t>(i)])) << (8 * i);
  s.remove_prefix(8);
  return true;
}
}  // namespace

std::string default_cache_dir() {
  if (const char* d = std::getenv("AJ_CACHE_DIR")) {
    std::string s = d;
    return s == "off" ? std::string() : s;
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/arrayjit";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/arrayjit";
  return "/tmp/arrayjit-" + std::to_string(::getuid());
}

std::uint64_t fnv1a64(std::string_view data) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string DiskCache::path_for(std::string_view key) const {
  char name[40];
  std::snprintf(name, sizeof name, "%016llx.ajk", static_cast<unsigned long long>(fnv1a64(key)));
  return dir_ + "/" + name;
}

namespace {

// Reads exactly `n` bytes into `out` (appending); false at end of file or on an error.
bool read_exact(int fd, std::size_t n, std::string* out) {
  const std::size_t start = out->size();
  out->resize(start + n);
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, out->data() + start + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += static_cast<std::size_t>(r);
  }
  return true;
}

// The entry at `path`, checked piece by piece before the next is read: a
// regular file (a FIFO would block the first evaluation forever, a device
// could be endless: O_NONBLOCK makes even the open of a FIFO return at once,
// and fstat tells what was opened) of at most kMaxEntryBytes, its magic, its
// key (the whole key: a file copied from another key's entry, even with its
// checksum made to match, is another kernel), then lengths that add up to
// the file's size; only then the payload, and its checksum.
DiskRead read_entry(const std::string& path, std::string_view key, std::string* payload) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return DiskRead::missing;  // absent or unreadable: compile and try to store
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return DiskRead::corrupt;
  const auto size = static_cast<std::uint64_t>(st.st_size);
  const std::uint64_t fixed = kMagicLen + 3 * 8;  // magic, key length, payload length, checksum
  if (size > DiskCache::kMaxEntryBytes || size < fixed + key.size()) return DiskRead::corrupt;
  std::string head;
  if (!read_exact(fd, kMagicLen + 8, &head) || head.compare(0, kMagicLen, kMagic, kMagicLen) != 0) {
    return DiskRead::corrupt;
  }
  std::string_view h = std::string_view(head).substr(kMagicLen);
  std::uint64_t klen = 0, plen = 0, sum = 0;
  if (!get_u64(h, &klen) || klen != key.size()) return DiskRead::corrupt;
  std::string rest;
  if (!read_exact(fd, key.size() + 16, &rest) || std::string_view(rest).substr(0, key.size()) != key) {
    return DiskRead::corrupt;
  }
  std::string_view r = std::string_view(rest).substr(key.size());
  if (!get_u64(r, &plen) || !get_u64(r, &sum) || plen != size - fixed - key.size()) return DiskRead::corrupt;
  payload->clear();
  if (!read_exact(fd, plen, payload) || fnv1a64(*payload) != sum) {
    payload->clear();
    return DiskRead::corrupt;
  }
  return DiskRead::hit;
}

// Whether `dir` may hold kernels this process runs: a directory owned by
// this user that no one else can write (whoever can write it can make every
// process that uses it run their code). Said once per directory otherwise.
bool dir_trusted(const std::string& dir, bool* exists) {
  struct stat st {};
  *exists = ::stat(dir.c_str(), &st) == 0;
  if (!*exists) return false;
  std::string why;
  if (!S_ISDIR(st.st_mode)) {
    why = "it is not a directory";
  } else if (st.st_uid != ::geteuid()) {
    why = "it is owned by uid " + std::to_string(st.st_uid) + ", not this user (" + std::to_string(::geteuid()) + ")";
  } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    why = std::string("others may write it (mode ") + mode + "; chmod go-w it, or set AJ_CACHE_DIR)";
  }
  if (why.empty()) return true;
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard lock(mu);
  if (said.insert(dir).second) {
    std::fprintf(stderr, "arrayjit: the kernel disk cache %s is not used: %s\n", dir.c_str(), why.c_str());
  }
  return false;
}

}  // namespace

DiskRead DiskCache::read(std::string_view key, std::string* payload) const {
  bool exists = false;
  if (!enabled() || !dir_trusted(dir_, &exists)) return DiskRead::missing;
  return read_entry(path_for(key), key, payload);
}

bool DiskCache::write(std::string_view key, std::string_view payload) const {
  if (!enabled()) return false;
  std::error_code ec;
  bool exists = false;
  if (!dir_trusted(dir_, &exists)) {
    if (exists) return false;
    // Made for this user alone (its parents as the umask says).
    const std::filesystem::path p(dir_);
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
    if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) return false;
    if (!dir_trusted(dir_, &exists)) return false;
  }
  std::string data(kMagic, kMagicLen);
  put_u64(data, key.size());
  data.append(key);
  put_u64(data, payload.size());
  put_u64(data, fnv1a64(payload));
  data.append(payload);
  const std::string path = path_for(key);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(std::random_device{}());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return false;
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!f) {
      f.close();
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return false;
  }
  return true;
}

void DiskCache::trim(std::size_t max_entries) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> entries;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".ajk") continue;
    entries.emplace_back(it->last_write_time(ec), it->path());
  }
  if (entries.size() <= max_entries) return;
  std::sort(entries.begin(), entries.end());
  const std::size_t drop = entries.size() - max_entries / 2;
  for (std::size_t i = 0; i < drop; ++i) fs::remove(entries[i].second, ec);
}

}  // namespace aj::jit
