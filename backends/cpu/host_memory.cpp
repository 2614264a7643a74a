#include "backends/cpu/host_memory.hpp"

#include <cstdlib>
#include <new>
#include <string>

#include "core/stats_internal.hpp"

namespace aj::cpu {

namespace {
void release_host(Storage& s) {
  detail::note_live_bytes(-static_cast<std::int64_t>(s.bytes));
  ++detail::stats_mut().system_frees;
  std::free(s.data);
}
}  // namespace

std::shared_ptr<Storage> host_alloc(std::size_t bytes) {
  // Round up so that the size is a multiple of the alignment (aligned_alloc's rule)
  // and never zero (empty arrays still get a distinct pointer).
  std::size_t padded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (padded == 0) padded = kAlignment;
  void* p = std::aligned_alloc(kAlignment, padded);
  if (!p) {
    runtime_error("aj: out of host memory allocating " + std::to_string(bytes) + " bytes");
  }
  auto s = std::make_shared<Storage>();
  s->data = p;
  s->bytes = bytes;
  s->device = Device::cpu();
  s->release = release_host;
  Stats& st = detail::stats_mut();
  ++st.system_allocs;
  st.bytes_allocated += bytes;
  detail::note_live_bytes(static_cast<std::int64_t>(bytes));
  return s;
}

std::shared_ptr<Storage> host_borrow(void* ptr, std::size_t bytes) {
  auto s = std::make_shared<Storage>();
  s->data = ptr;
  s->bytes = bytes;
  s->device = Device::cpu();
  s->borrowed = true;
  return s;
}

}  // namespace aj::cpu
