// The host caching allocator (see host_memory.hpp for the rules it keeps).
//
// One pool for the process, behind one mutex: an array of LIFO free lists, one
// per size class. Blocks come from the system (aligned_alloc below 1 MiB, mmap
// above, so that an impossible request fails with an error code instead of an
// abort under AddressSanitizer) and go back to it only on trim_memory, when the
// cache is over its limit, or when an allocation has failed.
#include "backends/cpu/host_memory.hpp"

#include <array>
#include <bit>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "arrayjit/error.hpp"
#include "base/allocation_limit.hpp"
#include "base/stats.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define AJ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AJ_ASAN 1
#endif
#endif

#ifdef AJ_ASAN
#include <sanitizer/asan_interface.h>
#define AJ_ASAN_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define AJ_ASAN_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define AJ_ASAN_POISON(p, n) ((void)(p), (void)(n))
#define AJ_ASAN_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace aj::cpu {

namespace {

// ---- buffer records ----------------------------------------------------------------

// The Storage record of each buffer (with its shared_ptr control block) comes
// from a small per-thread free list: a replay of a compiled function makes
// and drops a dozen records per call, and malloc/free were a third of its
// host time. Off under sanitizers, so they still see every record's life.
#if defined(AJ_ASAN) || defined(__SANITIZE_THREAD__)
constexpr bool kPoolRecords = false;
#else
constexpr bool kPoolRecords = true;
#endif

struct RecordList {
  void* head = nullptr;
  int count = 0;
  ~RecordList();
};
constinit thread_local bool t_records_gone = false;  // this thread's list was destroyed
thread_local RecordList t_records;

RecordList::~RecordList() {
  t_records_gone = true;
  while (head) {
    void* next = *static_cast<void**>(head);
    ::operator delete(head);
    head = next;
  }
}

template <class T>
struct RecordAllocator {
  using value_type = T;
  RecordAllocator() = default;
  template <class U>
  RecordAllocator(const RecordAllocator<U>&) {}
  T* allocate(std::size_t n) {
    if (kPoolRecords && n == 1 && !t_records_gone && t_records.head) {
      void* p = t_records.head;
      t_records.head = *static_cast<void**>(p);
      --t_records.count;
      return static_cast<T*>(p);
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) {
    static_assert(sizeof(T) >= sizeof(void*));
    if (kPoolRecords && n == 1 && !t_records_gone && t_records.count < 256) {
      *reinterpret_cast<void**>(p) = t_records.head;
      t_records.head = p;
      ++t_records.count;
      return;
    }
    ::operator delete(p);
  }
  template <class U>
  bool operator==(const RecordAllocator<U>&) const { return true; }
};

std::shared_ptr<Storage> new_record() { return std::allocate_shared<Storage>(RecordAllocator<Storage>{}); }

// ---- size classes ------------------------------------------------------------------

// Larger requests fail at once: no system has that much memory, and the class
// arithmetic below stays far from overflow.
constexpr std::size_t kMaxRequest = std::size_t{1} << 62;
// Blocks of this class size and above are mmap'ed.
constexpr std::size_t kMapThreshold = std::size_t{1} << 20;

struct SizeClass {
  std::size_t index;
  std::size_t size;
};

// 64, 128, ..., 4096 (indices 0..6), then 2^k * {1.25, 1.5, 1.75, 2} for k >= 12.
constexpr SizeClass classify(std::size_t n) {
  if (n <= 64) return {0, 64};
  if (n <= 4096) {
    const int k = static_cast<int>(std::bit_width(n - 1));  // 2^(k-1) < n <= 2^k
    return {static_cast<std::size_t>(k - 6), std::size_t{1} << k};
  }
  const int k = static_cast<int>(std::bit_width(n - 1)) - 1;  // 2^k < n <= 2^(k+1)
  const std::size_t base = std::size_t{1} << k, step = base >> 2;
  const std::size_t m = (n - base + step - 1) / step;  // 1..4
  return {7 + static_cast<std::size_t>(k - 12) * 4 + (m - 1), base + m * step};
}

constexpr std::size_t class_size_at(std::size_t index) {
  if (index <= 6) return std::size_t{64} << index;
  const std::size_t k = 12 + (index - 7) / 4, m = (index - 7) % 4 + 1;
  return (std::size_t{1} << k) + m * (std::size_t{1} << (k - 2));
}

constexpr std::size_t kClasses = classify(kMaxRequest).index + 1;

static_assert(classify(0).size == 64 && classify(65).size == 128);
static_assert(classify(4096).size == 4096 && classify(4096).index == 6);
static_assert(classify(4097).size == 5120 && classify(4097).index == 7);
static_assert(classify(8192).size == 8192 && classify(8193).size == 10240);
static_assert(classify(kMaxRequest).size == kMaxRequest);
static_assert(class_size_at(classify(12345).index) == classify(12345).size);
static_assert(class_size_at(kClasses - 1) == kMaxRequest);

// The bytes a buffer's owner may touch: its size rounded up to the alignment
// (what aligned_alloc used to give), never zero. The rest of the class is
// slack, poisoned for ASan.
constexpr std::size_t visible_bytes(std::size_t bytes) {
  std::size_t padded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  return padded == 0 ? kAlignment : padded;
}

// ---- configuration -----------------------------------------------------------------

bool poison_from_env() {
  const char* e = std::getenv("AJ_POISON");
  if (e && *e) return std::strcmp(e, "0") != 0;
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}

// A quarter of physical memory, at most 4 GiB.
std::size_t default_limit() {
  constexpr std::size_t k4GiB = std::size_t{4} << 30;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return k4GiB;
  const std::size_t quarter = static_cast<std::size_t>(pages) / 4 * static_cast<std::size_t>(page);
  return quarter < k4GiB ? quarter : k4GiB;
}

// AJ_MEMORY_LIMIT: a byte count with an optional K, M, G or T suffix (powers of
// 1024). Anything else is ignored.
std::size_t limit_from_env(std::size_t fallback) {
  const char* e = std::getenv("AJ_MEMORY_LIMIT");
  if (!e || !std::isdigit(static_cast<unsigned char>(*e))) return fallback;
  char* end = nullptr;
  unsigned long long v = std::strtoull(e, &end, 10);
  int shift = 0;
  switch (std::toupper(static_cast<unsigned char>(*end))) {
    case 'K': shift = 10; ++end; break;
    case 'M': shift = 20; ++end; break;
    case 'G': shift = 30; ++end; break;
    case 'T': shift = 40; ++end; break;
    default: break;
  }
  if (*end != '\0' || (shift && v > (~0ULL >> shift))) return fallback;
  return static_cast<std::size_t>(v << shift);
}

// ---- the pool ----------------------------------------------------------------------

struct HostPool {
  std::mutex mu;
  std::array<std::vector<void*>, kClasses> free_lists;  // back = most recently freed
  std::size_t cached = 0;                               // class bytes in free_lists
  std::size_t limit = limit_from_env(default_limit());
  const bool poison = poison_from_env();
};

HostPool& pool() {
  static HostPool* p = new HostPool();  // never destroyed: arrays in static objects may outlive main
  return *p;
}

void* system_alloc(std::size_t size) {
  if (size >= kMapThreshold) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  return std::aligned_alloc(kAlignment, size);  // size is a multiple of 64
}

void system_free(void* p, std::size_t size) {
  AJ_ASAN_UNPOISON(p, size);
  if (size >= kMapThreshold) {
    munmap(p, size);
  } else {
    std::free(p);
  }
}

// Give cached blocks back to the system until at most `keep` bytes stay
// cached: largest classes first, oldest block of a class first. Returns the
// bytes released. The caller holds pl.mu.
std::size_t release_cached_locked(HostPool& pl, std::size_t keep) {
  std::size_t released = 0;
  detail::Counters& st = detail::stats_mut();
  for (std::size_t c = kClasses; c-- > 0 && pl.cached > keep;) {
    std::vector<void*>& list = pl.free_lists[c];
    const std::size_t size = class_size_at(c);
    std::size_t n = 0;
    while (n < list.size() && pl.cached > keep) {
      system_free(list[n++], size);
      pl.cached -= size;
      released += size;
      ++st.system_frees;
    }
    list.erase(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(n));
  }
  return released;
}

// Storage::release for pooled buffers: back on the free list at once, or to
// the system when the cache is full. Never throws (it runs in a destructor).
void release_host(Storage& s) {
  HostPool& pl = pool();
  const SizeClass cls = classify(s.bytes);
  // Poison before the block is visible to other threads on the free list.
  if (pl.poison) std::memset(s.data, 0xFF, visible_bytes(s.bytes));
  AJ_ASAN_POISON(s.data, cls.size);
  bool kept = false;
  {
    std::lock_guard<std::mutex> lock(pl.mu);
    detail::note_live_bytes(-static_cast<std::int64_t>(s.bytes));
    if (cls.size <= pl.limit - pl.cached) {
      try {
        pl.free_lists[cls.index].push_back(s.data);
        pl.cached += cls.size;
        kept = true;
      } catch (const std::bad_alloc&) {
        // No room to list it: give it back to the system instead.
      }
    }
    if (!kept) ++detail::stats_mut().system_frees;
  }
  if (!kept) system_free(s.data, cls.size);
  s.data = nullptr;
}

[[noreturn]] void out_of_memory(std::size_t bytes, const std::string& why) {
  throw detail::OutOfMemory("out of host memory allocating " + std::to_string(bytes) + " bytes (" + why + ")");
}

}  // namespace

std::shared_ptr<Storage> host_alloc(std::size_t bytes) {
  if (bytes > kMaxRequest) out_of_memory(bytes, "more than any system can provide");
  const SizeClass cls = classify(bytes);
  // The record first: if it cannot be made, no block has been taken yet.
  std::shared_ptr<Storage> s;
  try {
    s = new_record();
  } catch (const std::bad_alloc&) {
    out_of_memory(bytes, "no memory left for the buffer's record");
  }
  s->bytes = bytes;
  s->device = Device::cpu();

  HostPool& pl = pool();
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(pl.mu);
    std::vector<void*>& list = pl.free_lists[cls.index];
    if (!list.empty()) {
      p = list.back();
      list.pop_back();
      pl.cached -= cls.size;
      ++detail::stats_mut().pool_hits;
      detail::note_live_bytes(static_cast<std::int64_t>(bytes));
    }
  }
  if (p) {
    AJ_ASAN_UNPOISON(p, visible_bytes(bytes));  // the slack stays poisoned
  } else {
    detail::before_system_alloc(cls.size);  // (aj::compile's max_allocations may refuse it)
    p = system_alloc(cls.size);
    if (!p) {
      // The cache may hold what the system lacks: release it and try once more.
      std::size_t released;
      {
        std::lock_guard<std::mutex> lock(pl.mu);
        released = release_cached_locked(pl, 0);
      }
      p = system_alloc(cls.size);
      if (!p) out_of_memory(bytes, std::to_string(released) + " bytes cached were released first");
    }
    if (cls.size > visible_bytes(bytes)) {
      AJ_ASAN_POISON(static_cast<char*>(p) + visible_bytes(bytes), cls.size - visible_bytes(bytes));
    }
    std::lock_guard<std::mutex> lock(pl.mu);
    detail::Counters& st = detail::stats_mut();
    ++st.system_allocs;
    st.bytes_allocated += cls.size;
    detail::note_live_bytes(static_cast<std::int64_t>(bytes));
  }
  s->data = p;
  s->release = release_host;
  return s;
}

std::shared_ptr<Storage> host_alloc(std::int64_t count, std::size_t item) {
  std::size_t bytes = 0;
  if (count < 0 || __builtin_mul_overflow(static_cast<std::size_t>(count), item, &bytes)) {
    runtime_error("aj: cannot allocate " + std::to_string(count) + " elements of " + std::to_string(item) +
                  " bytes: the byte size does not fit in size_t");
  }
  return host_alloc(bytes);
}

std::shared_ptr<Storage> host_borrow(void* ptr, std::size_t bytes) {
  auto s = std::make_shared<Storage>();
  s->data = ptr;
  s->bytes = bytes;
  s->device = Device::cpu();
  s->borrowed = true;
  return s;
}

std::size_t host_size_class(std::size_t bytes) {
  return bytes > kMaxRequest ? bytes : classify(bytes).size;
}

bool host_poisons_freed_blocks() { return pool().poison; }


void host_trim() {
  HostPool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  release_cached_locked(pl, 0);
}

void set_host_cache_limit(std::size_t bytes) {
  HostPool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  pl.limit = bytes;
  release_cached_locked(pl, bytes);
}

std::size_t host_cache_limit() {
  HostPool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  return pl.limit;
}

std::size_t host_cached_bytes() {
  HostPool& pl = pool();
  std::lock_guard<std::mutex> lock(pl.mu);
  return pl.cached;
}

}  // namespace aj::cpu
