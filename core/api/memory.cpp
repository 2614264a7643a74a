// The public API of arrayjit/memory.hpp: the host caching allocator's controls.
#include "arrayjit/memory.hpp"

#include "backends/cpu/host_memory.hpp"

namespace aj {

void trim_memory() { cpu::host_trim(); }
void set_memory_limit(std::size_t bytes) { cpu::set_host_cache_limit(bytes); }
std::size_t memory_limit() { return cpu::host_cache_limit(); }
std::size_t cached_bytes() { return cpu::host_cached_bytes(); }

}  // namespace aj
