// The pool large host kernels are split over. Why not OpenMP: measured on a
// busy 2-core machine, an OpenMP parallel region ends with a barrier that
// waits for every team thread to arrive, so a worker the OS has not
// scheduled yet holds the kernel up for milliseconds even when the caller
// has done all the work (seed n=1000 on 2 threads: 8 ms instead of 0.15 ms).
// Here the caller takes chunks too and returns as soon as every chunk is
// done; a worker that wakes late finds nothing left and goes back to sleep.
// Correctness never depends on a worker showing up (after fork(), say).
#pragma once

#include <cstdint>

namespace aj::cpu {

using ChunkFn = void (*)(const void* ctx, std::int64_t begin, std::int64_t end);

// Run fn(ctx, lo, hi) over `chunks` contiguous pieces of [0, total) on up to
// `threads` threads (the caller included); returns when all are done.
void parallel_chunks(ChunkFn fn, const void* ctx, std::int64_t total, std::int64_t chunks, int threads);

// Hardware threads (at least 1).
int hardware_threads();

}  // namespace aj::cpu
