// Host memory: the caching allocator behind every CPU buffer.
//
// A buffer goes back to a cache the moment the last array (or view) holding it
// dies, and the next buffer of the same size class takes it without asking the
// system. aj::stats() counts the two apart: system_allocs / bytes_allocated for
// real system allocations, pool_hits for buffers served from the cache.
//
// The cache holds at most memory_limit() bytes. The default is a quarter of
// physical memory, at most 4 GiB (4 GiB where physical memory is unknown);
// the environment variable AJ_MEMORY_LIMIT (bytes, optional K/M/G suffix,
// read at first use) overrides it. When the system runs out of memory the
// cache is released and the allocation retried once before an aj::Error
// (runtime) is thrown.
#pragma once

#include <cstddef>

namespace aj {

// Give every cached (free) host buffer back to the system now. Buffers that
// arrays hold are not touched.
void trim_memory();

// Cap the bytes the cache may hold (live buffers are not counted). A freed
// buffer that would take the cache over the cap goes back to the system
// instead; lowering the cap releases cached buffers at once. 0 caches nothing.
void set_memory_limit(std::size_t bytes);
std::size_t memory_limit();

// Bytes held in the cache now (size-class bytes of free buffers).
std::size_t cached_bytes();

}  // namespace aj
