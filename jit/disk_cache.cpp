#include "jit/disk_cache.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
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
// The whole of the regular file at `path`. Anything else placed there (a
// FIFO would block the first evaluation forever, a device could be endless)
// is refused without reading: O_NONBLOCK makes even the open of a FIFO
// return at once, and fstat tells what was opened.
DiskRead read_regular_file(const std::string& path, std::string* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return DiskRead::missing;  // absent or unreadable: compile and try to store
  struct stat st {};
  DiskRead r = DiskRead::corrupt;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    out->clear();
    char buf[1 << 16];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
      if (n > 0) out->append(buf, static_cast<std::size_t>(n));
    }
    if (n == 0) r = DiskRead::hit;
  }
  ::close(fd);
  return r;
}
}  // namespace

DiskRead DiskCache::read(std::string_view key, std::string* payload) const {
  std::string all;
  if (DiskRead r = read_regular_file(path_for(key), &all); r != DiskRead::hit) return r;
  // The entry names its key: a file copied from another key's entry (even
  // with its checksum made to match) is another kernel, never this one.
  std::string_view s = all;
  std::uint64_t klen = 0, plen = 0, sum = 0;
  if (s.substr(0, kMagicLen) != std::string_view(kMagic, kMagicLen)) return DiskRead::corrupt;
  s.remove_prefix(kMagicLen);
  if (!get_u64(s, &klen) || klen != key.size() || s.size() < klen || s.substr(0, klen) != key) {
    return DiskRead::corrupt;
  }
  s.remove_prefix(klen);
  if (!get_u64(s, &plen) || !get_u64(s, &sum) || s.size() != plen || fnv1a64(s) != sum) {
    return DiskRead::corrupt;
  }
  payload->assign(s);
  return DiskRead::hit;
}

bool DiskCache::write(std::string_view key, std::string_view payload) const {
  if (!enabled()) return false;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
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
