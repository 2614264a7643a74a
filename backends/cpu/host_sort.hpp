// Sort, argsort and topk on the host (library steps, graph/library.hpp):
// every line along the call's axis is sorted on its own, lines split over
// the thread pool.
//
// The order is docs/semantics.md's: ascending and stable, NaN after every
// number (all NaNs equal), -0.0 equal to +0.0; topk descending with NaN
// first and ties by the lower index. Each element gets an unsigned key whose
// integer order is that order (floats: sign-magnitude flipped, -0.0 folded
// onto +0.0, every NaN the largest key); a line is sorted by an LSD radix
// sort of (key, position) pairs, which is stable, so equal keys keep their
// positions' order. Short lines take an insertion or comparison sort, a
// small k of a long line a partial sort of positions; these compare (key,
// position), the same total order. On an AVX-512 CPU, lines of moderate
// length take a sorting network instead (host_sort_network.hpp): the values
// themselves where equal values are equal bits, else (key, position) words.
// Scratch comes from the host allocator's cache (host_memory.hpp), so a sort
// in a loop faults no fresh pages in.
#pragma once

#include <vector>

#include "graph/library.hpp"

namespace aj::cpu {

// call.op is Sort, ArgSort, TopK or ArgTopK; `in` the operand's buffer base
// (element 0 of its storage); `out` the contiguous result.
void sort_lines(const LibraryCall& call, const void* in, void* out, int threads);

}  // namespace aj::cpu
