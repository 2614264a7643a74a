// Kernel IR -> CUDA C. Render-only: works without a GPU, driver or NVRTC.
//
// A kernel is first collapsed (collapse_axes): axes of extent 1 are dropped and
// neighbouring axes that every stream walks contiguously are merged, so a
// contiguous elementwise kernel of any rank becomes rank 1 with unit strides.
// The source is then a function of the collapsed kernel's structure only —
// rank, reduce axes, which axes of each stream have stride 0 / 1 / other,
// dtypes, instructions — never of extents, strides, offsets or scalar values:
// those travel in one parameter block (pack_params), so a growing size or a
// new learning rate reuses the compiled kernel.
//
// Entry points of every module (all take the parameter block `P` by value):
//   aj_k         elementwise: grid-stride loop; a 16-byte vector path (taken
//                when P.vec != 0, i.e. every unit-stride pointer is aligned)
//                plus a scalar path for the tail and for misaligned data.
//                reduction: one block per (outer point, part of the reduced
//                range), warp shuffles + shared memory to combine; with one
//                part it runs the epilogue (phase 1) and stores, with several
//                it writes partial accumulators to P.scratch.
//   aj_k_finish  reduction: one block per outer point combines the parts in
//                P.scratch, runs the epilogue and stores (second pass of a
//                full reduction to a scalar; no atomics, deterministic).
//   aj_k_serial  reduction: one thread per outer point walks the whole reduced
//                range (small reduced ranges, or column reductions where
//                neighbouring threads read neighbouring addresses). Kernels
//                with a scan (KOp::Scan) always run this entry: the running
//                value needs the axis walked in order (aj_k and aj_k_finish
//                are empty there).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/kernel.hpp"

namespace aj::cuda {

Kernel collapse_axes(const Kernel& k);

struct KernelSource {
  std::string source;        // complete CUDA C, prelude included
  std::uint64_t hash = 0;    // of `source`: the compile cache key
  bool reduction = false;
  int vec = 0;               // elements per wide access; 0: no vector path
  std::size_t param_bytes = 0;
};

// CUDA C for a kernel already passed through collapse_axes.
KernelSource render(const Kernel& collapsed);

inline constexpr int kThreadsPerBlock = 256;  // every entry's __launch_bounds__

// How a launch splits the work (plan_launch).
struct LaunchShape {
  enum class Mode { elementwise, blocks, serial } mode = Mode::elementwise;
  std::int64_t parts = 1;        // blocks mode: parts of the reduced range per outer point
  bool vec = false;              // elementwise: take the vector path
  std::int64_t grid = 0;         // blocks of the main entry (0: nothing to launch)
  std::int64_t finish_grid = 0;  // blocks of aj_k_finish (0: not launched)
  std::size_t scratch_bytes = 0; // device scratch for the parts' accumulators
};

// The launch of collapsed kernel `c` (whose source has vector width `vec`)
// over streams at device addresses `ptrs` on a device with `sms`
// multiprocessors: vector path only when every unit-stride pointer is aligned
// to its vector; reductions thread-per-outer-point for small reduced ranges
// or coalesced column walks, else block-per-point, split into parts (two
// passes) when there are too few outer points to fill the device.
LaunchShape plan_launch(const Kernel& c, int vec, int sms, const std::vector<std::uint64_t>& ptrs);

// The parameter block for one launch, laid out as render() declared it.
// ptrs: one device address per stream (inputs, then outputs; 0 for index
// streams); scratch: device address of parts * nouter * reductions 8-byte slots.
std::vector<std::int64_t> pack_params(const Kernel& collapsed, const std::vector<std::uint64_t>& ptrs,
                                      const LaunchShape& shape, std::uint64_t scratch);

// Whether the innermost axis is an outer (kept) axis: then neighbouring outer
// points are neighbouring addresses and aj_k_serial reads coalesced.
bool innermost_is_outer(const Kernel& collapsed);
// Scratch slots per outer point and part: one per Reduce instruction, two
// for an argmax/argmin (its best value and its index).
int reductions(const Kernel& collapsed);

}  // namespace aj::cuda
