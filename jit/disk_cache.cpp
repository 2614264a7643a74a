#include "jit/disk_cache.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <utility>
#include <vector>

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

DiskRead DiskCache::read(std::string_view key, std::string* payload) const {
  std::ifstream f(path_for(key), std::ios::binary);
  if (!f) return DiskRead::missing;
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string all = ss.str();
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
