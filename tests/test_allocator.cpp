// The host caching allocator: a freed buffer goes straight back to its size
// class and the next request of that class takes it (LIFO) without a system
// allocation; blocks are 64-byte aligned; the cache can be trimmed and capped;
// running out of memory throws a runtime aj::Error, leaks nothing and leaves
// held arrays intact; freed blocks never change an array the user still holds.
// Counters are compared with a baseline taken in the same test.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/host_memory.hpp"

namespace {

using aj::cpu::host_alloc;

// Sets a cache limit for one test and restores the previous one after.
struct LimitGuard {
  std::size_t saved = aj::memory_limit();
  explicit LimitGuard(std::size_t bytes) { aj::set_memory_limit(bytes); }
  ~LimitGuard() { aj::set_memory_limit(saved); }
  LimitGuard(const LimitGuard&) = delete;
  LimitGuard& operator=(const LimitGuard&) = delete;
};

constexpr std::size_t kMiB = std::size_t{1} << 20;

std::vector<float> ramp(std::size_t n, float start) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

}  // namespace

TEST_SUITE("allocator") {

TEST_CASE("a freed buffer is handed to the next request of its size (LIFO, no system call)") {
  LimitGuard limit(256 * kMiB);
  for (std::size_t bytes : {std::size_t{40}, std::size_t{1000}, std::size_t{100000},
                            std::size_t{3} * kMiB}) {
    CAPTURE(bytes);
    auto a = host_alloc(bytes);
    auto b = host_alloc(bytes);
    void* pa = a->data;
    void* pb = b->data;
    CHECK(pa != pb);
    const aj::Stats s0 = aj::stats();
    a.reset();
    b.reset();  // b freed last: it comes back first
    CHECK(aj::stats().system_frees == s0.system_frees);
    auto c = host_alloc(bytes);
    CHECK(c->data == pb);
    auto d = host_alloc(bytes);
    CHECK(d->data == pa);
    const aj::Stats s1 = aj::stats();
    CHECK(s1.system_allocs == s0.system_allocs);
    CHECK(s1.bytes_allocated == s0.bytes_allocated);
    CHECK(s1.pool_hits == s0.pool_hits + 2);
  }
}

TEST_CASE("every buffer is at least 64-byte aligned and its class fits it with bounded waste") {
  LimitGuard limit(256 * kMiB);
  std::vector<std::shared_ptr<aj::Storage>> held;
  std::vector<std::size_t> sizes = {0, 1, 7, 63, 64, 65, 100, 127, 128, 129, 1000, 4095, 4096,
                                    4097, 5000, 5121, 6143, 8191, 8193, 65536, 100001,
                                    kMiB - 1, kMiB, kMiB + 1, 5 * kMiB + 3};
  for (std::size_t s = 3; s < 20000; s += 97) sizes.push_back(s);
  for (std::size_t bytes : sizes) {
    CAPTURE(bytes);
    auto s = host_alloc(bytes);
    CHECK(reinterpret_cast<std::uintptr_t>(s->data) % 64 == 0);
    CHECK(s->bytes == bytes);
    if (bytes > 0) {
      std::memset(s->data, 0x5A, bytes);  // the whole buffer is writable
    }
    const std::size_t cls = aj::cpu::host_size_class(bytes);
    CHECK(cls >= bytes);
    CHECK(cls % 64 == 0);
    if (bytes > 4096) CHECK(cls - bytes < bytes / 4);  // four classes per power of two
    held.push_back(std::move(s));
  }
  // Classes grow with the request.
  for (std::size_t b = 1; b < 300000; b += 37) {
    CHECK(aj::cpu::host_size_class(b) <= aj::cpu::host_size_class(b + 37));
  }
}

TEST_CASE("requests in one size class share blocks; the next class does not") {
  LimitGuard limit(256 * kMiB);
  REQUIRE(aj::cpu::host_size_class(4097) == 5120);
  REQUIRE(aj::cpu::host_size_class(5120) == 5120);
  REQUIRE(aj::cpu::host_size_class(5121) == 6144);
  auto a = host_alloc(4097);
  void* pa = a->data;
  a.reset();
  const aj::Stats s0 = aj::stats();
  auto b = host_alloc(5120);
  CHECK(b->data == pa);
  CHECK(aj::stats().pool_hits == s0.pool_hits + 1);
  b.reset();
  auto c = host_alloc(5121);  // a different class: not that block
  CHECK(c->data != pa);
  auto d = host_alloc(4500);
  CHECK(d->data == pa);
}

TEST_CASE("live bytes count the requested size; system bytes the class size") {
  LimitGuard limit(256 * kMiB);
  aj::trim_memory();
  const aj::Stats s0 = aj::stats();
  {
    auto a = host_alloc(4097);
    const aj::Stats s1 = aj::stats();
    CHECK(s1.live_bytes == s0.live_bytes + 4097);
    CHECK(s1.system_allocs == s0.system_allocs + 1);
    CHECK(s1.bytes_allocated == s0.bytes_allocated + 5120);
  }
  CHECK(aj::stats().live_bytes == s0.live_bytes);
  CHECK(aj::cached_bytes() == 5120);
  {
    auto b = host_alloc(5000);  // a pool hit still counts as live
    CHECK(aj::stats().live_bytes == s0.live_bytes + 5000);
  }
  CHECK(aj::stats().live_bytes == s0.live_bytes);
}

TEST_CASE("trim_memory gives every cached block back to the system") {
  LimitGuard limit(256 * kMiB);
  {
    std::vector<std::shared_ptr<aj::Storage>> blocks;
    for (int i = 0; i < 10; ++i) blocks.push_back(host_alloc(3000 + 100000 * static_cast<std::size_t>(i)));
  }
  CHECK(aj::cached_bytes() > 0);
  const aj::Stats s0 = aj::stats();
  aj::trim_memory();
  CHECK(aj::cached_bytes() == 0);
  CHECK(aj::stats().system_frees >= s0.system_frees + 10);
  // The next request goes to the system again.
  auto a = host_alloc(3000);
  CHECK(aj::stats().system_allocs == s0.system_allocs + 1);
  CHECK(aj::stats().pool_hits == s0.pool_hits);
}

TEST_CASE("set_memory_limit caps the cache; 0 caches nothing") {
  const std::size_t saved = aj::memory_limit();
  SUBCASE("limit 0: every free goes to the system") {
    LimitGuard limit(0);
    CHECK(aj::memory_limit() == 0);
    CHECK(aj::cached_bytes() == 0);  // lowering the limit released the cache
    auto a = host_alloc(1000);
    const aj::Stats s0 = aj::stats();
    a.reset();
    CHECK(aj::stats().system_frees == s0.system_frees + 1);
    CHECK(aj::cached_bytes() == 0);
    auto b = host_alloc(1000);
    CHECK(aj::stats().system_allocs == s0.system_allocs + 1);
    CHECK(aj::stats().pool_hits == s0.pool_hits);
  }
  SUBCASE("a freed block that would go over the limit is released instead") {
    aj::trim_memory();
    LimitGuard limit(aj::cpu::host_size_class(100000));
    auto a = host_alloc(100000);
    auto b = host_alloc(100000);
    const aj::Stats s0 = aj::stats();
    a.reset();
    CHECK(aj::cached_bytes() == aj::cpu::host_size_class(100000));
    b.reset();
    CHECK(aj::cached_bytes() == aj::cpu::host_size_class(100000));
    CHECK(aj::stats().system_frees == s0.system_frees + 1);
  }
  SUBCASE("lowering the limit releases cached blocks at once") {
    LimitGuard limit(256 * kMiB);
    {
      auto a = host_alloc(2 * kMiB);
      auto b = host_alloc(4000);
    }
    CHECK(aj::cached_bytes() >= 2 * kMiB + 4096);
    aj::set_memory_limit(kMiB);
    CHECK(aj::cached_bytes() <= kMiB);
    CHECK(aj::memory_limit() == kMiB);
  }
  CHECK(aj::memory_limit() == saved);  // restored by LimitGuard
}

TEST_CASE("running out of host memory throws a runtime aj::Error and leaves held arrays valid") {
  LimitGuard limit(256 * kMiB);
  const std::vector<float> values = ramp(1000, 0.5f);
  aj::Array x = aj::from_vector(values);
  { auto cached = host_alloc(50000); }
  CHECK(aj::cached_bytes() > 0);
  const aj::Stats s0 = aj::stats();

  const std::size_t huge = std::size_t{1} << 60;
  bool threw = false;
  try {
    auto s = host_alloc(huge);
  } catch (const aj::Error& e) {
    threw = true;
    CHECK(e.kind() == aj::Error::Kind::runtime);
    const std::string what = e.what();
    CHECK(what.find("out of host memory") != std::string::npos);
    CHECK(what.find(std::to_string(huge)) != std::string::npos);
    CHECK(what.find("cached were released first") != std::string::npos);
  }
  CHECK(threw);
  CHECK(aj::cached_bytes() == 0);  // the cache was released before giving up
  // Nothing leaked, nothing counted as live or allocated.
  const aj::Stats s1 = aj::stats();
  CHECK(s1.live_bytes == s0.live_bytes);
  CHECK(s1.system_allocs == s0.system_allocs);

  // A request no system could hold fails at once.
  CHECK_THROWS_AS(host_alloc(~std::size_t{0}), aj::Error);

  // The held array is intact and still usable.
  CHECK(x.to_vector<float>() == values);
  aj::Array y = x + 1.0f;
  CHECK(y.to_vector<float>() == ramp(1000, 1.5f));
  CHECK(aj::stats().live_bytes >= s0.live_bytes);
}

TEST_CASE("an evaluation that runs out of memory throws and leaves held arrays valid") {
  LimitGuard limit(256 * kMiB);
  const std::vector<float> values = ramp(64, 2.0f);
  aj::Array x = aj::from_vector(values);
  const std::uint64_t live0 = aj::stats().live_bytes;
  {
    // 2^57 i64 elements = 2^60 bytes: the trace is fine, the buffer cannot be had.
    // (arange, not full: a fill may be kept as a broadcast scalar.)
    aj::Array big = aj::arange(std::int64_t{1} << 57);
    aj::Array sum = big * 3;
    bool threw = false;
    const int line = __LINE__ + 2;
    try {
      sum.eval();
    } catch (const aj::Error& e) {
      threw = true;
      CHECK(e.kind() == aj::Error::Kind::runtime);
      // Named as the caller's evaluation, at the caller's line, with the allocator's reason.
      const std::string what = e.what();
      CAPTURE(what);
      CHECK(what.rfind("aj::eval: out of host memory allocating", 0) == 0);
      CHECK(what.find("test_allocator.cpp:" + std::to_string(line)) != std::string::npos);
    }
    CHECK(threw);
    // The same through a compiled call: aj::compile's line.
    const int compiled_at = __LINE__ + 1;
    auto times3 = aj::compile([](const aj::Array& a) { return a * 3; });
    threw = false;
    try {
      (void)times3(big);
    } catch (const aj::Error& e) {
      threw = true;
      const std::string what = e.what();
      CAPTURE(what);
      CHECK(e.kind() == aj::Error::Kind::runtime);
      CHECK(what.find("out of host memory") != std::string::npos);
      CHECK(what.find("test_allocator.cpp:" + std::to_string(compiled_at)) != std::string::npos);
    }
    CHECK(threw);
  }
  CHECK(aj::stats().live_bytes == live0);
  CHECK(x.to_vector<float>() == values);
  std::vector<float> doubled;
  for (float v : values) doubled.push_back(2.0f * v);
  CHECK((x * 2.0f).to_vector<float>() == doubled);
}

TEST_CASE("a held array keeps its values while freed blocks of its size are reused") {
  LimitGuard limit(256 * kMiB);
  const std::size_t n = 4096;
  const std::vector<float> values = ramp(n, 1.0f);
  aj::Array held = aj::from_vector(values);
  const aj::Stats s0 = aj::stats();
  for (int i = 0; i < 200; ++i) {
    aj::Array tmp = aj::from_vector(ramp(n, static_cast<float>(-i)));
    aj::Array twice = tmp * 2.0f;
    CHECK(twice.to_vector<float>()[1] == 2.0f * (static_cast<float>(-i) + 1.0f));
    aj::Array sum = held + tmp;
    sum.eval();
  }
  CHECK(held.to_vector<float>() == values);
  CHECK(aj::stats().pool_hits > s0.pool_hits);
}

TEST_CASE("after an array dies its buffer goes to the next array of the same size") {
  LimitGuard limit(256 * kMiB);
  const std::vector<double> a_values(777, 3.25);
  const std::vector<double> b_values(777, -1.5);
  aj::Array a = aj::from_vector(a_values);
  const aj::Stats s0 = aj::stats();
  a = aj::Array();  // the last reference: the buffer is back in the pool now
  CHECK(aj::stats().live_bytes == s0.live_bytes - 777 * sizeof(double));
  aj::Array b = aj::from_vector(b_values);
  const aj::Stats s1 = aj::stats();
  CHECK(s1.system_allocs == s0.system_allocs);
  CHECK(s1.pool_hits == s0.pool_hits + 1);
  CHECK(s1.live_bytes == s0.live_bytes);
  CHECK(b.to_vector<double>() == b_values);
}

TEST_CASE("freed blocks are filled with 0xFF when poisoning is on") {
  LimitGuard limit(256 * kMiB);
  auto a = host_alloc(1024);
  void* p = a->data;
  std::memset(p, 0x11, 1024);
  a.reset();
  auto b = host_alloc(1024);
  REQUIRE(b->data == p);
  const auto* bytes = static_cast<const unsigned char*>(b->data);
  std::size_t poisoned = 0;
  for (std::size_t i = 0; i < 1024; ++i) poisoned += bytes[i] == 0xFF;
  if (aj::cpu::host_poisons_freed_blocks()) {
    CHECK(poisoned == 1024);
    // As floats that is NaN, as integers -1.
    float f;
    std::int32_t i;
    std::memcpy(&f, bytes, sizeof f);
    std::memcpy(&i, bytes, sizeof i);
    CHECK(f != f);
    CHECK(i == -1);
  } else {
    CHECK(poisoned == 0);
  }
}

TEST_CASE("threads allocating and freeing concurrently keep the counts balanced") {
  LimitGuard limit(256 * kMiB);
  const std::uint64_t live0 = aj::stats().live_bytes;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      std::vector<std::shared_ptr<aj::Storage>> mine;
      for (int i = 0; i < 2000; ++i) {
        const std::size_t bytes = 64 + static_cast<std::size_t>((i * 131 + t * 17) % 9000);
        auto s = host_alloc(bytes);
        static_cast<unsigned char*>(s->data)[bytes - 1] = static_cast<unsigned char>(i);
        if (i % 3 == 0) mine.push_back(std::move(s));
        if (mine.size() > 16) mine.erase(mine.begin());
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(aj::stats().live_bytes == live0);
}

}  // TEST_SUITE
