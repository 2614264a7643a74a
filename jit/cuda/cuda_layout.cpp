// Axis collapsing, launch planning and parameter packing for generated CUDA
// kernels (see cuda_source.hpp): the host side of the source's layout.
#include <algorithm>
#include <cstring>

#include "arrayjit/error.hpp"
#include "jit/cuda/cuda_source.hpp"

namespace aj::cuda {

Kernel collapse_axes(const Kernel& k) {
  Kernel c;
  if (!aj::collapse_axes(k, &c, 1)) c = k;
  return c;
}

bool innermost_is_outer(const Kernel& k) {
  return !k.shape.empty() && (k.reduce_axes.empty() || k.reduce_axes.back() != static_cast<std::int64_t>(k.shape.size()) - 1);
}

int reductions(const Kernel& k) {
  int n = 0;  // an arg reduction keeps its best value and its index
  for (auto& in : k.instrs) n += in.kind == KOp::Reduce ? (in.op == Op::ArgMax || in.op == Op::ArgMin ? 2 : 1) : 0;
  return n;
}

std::vector<std::int64_t> pack_params(const Kernel& k, const std::vector<std::uint64_t>& ptrs,
                                      const LaunchShape& shape, std::uint64_t scratch) {
  const std::size_t S = k.inputs.size() + k.outputs.size();
  if (ptrs.size() != S) internal_error("cuda pack_params: one pointer per stream expected");
  std::vector<std::int64_t> p;
  const bool red = k.is_reduction();
  p.push_back(red ? k.outer_points() : k.points());
  p.push_back(red ? k.inner_points() : 1);
  p.push_back(shape.parts);
  p.push_back(shape.vec ? 1 : 0);
  for (auto e : k.shape) p.push_back(e);
  auto stream = [&](std::size_t s) -> const KStream& {
    return s < k.inputs.size() ? k.inputs[s] : k.outputs[s - k.inputs.size()].stream;
  };
  for (std::size_t s = 0; s < S; ++s) p.push_back(stream(s).offset);
  for (std::size_t s = 0; s < S; ++s) {
    for (auto st : stream(s).strides) p.push_back(st);
  }
  const std::size_t NS = std::max<std::size_t>(1, k.scalars.size());
  for (std::size_t i = 0; i < NS; ++i) p.push_back(i < k.scalars.size() ? k.scalars[i].i : 0);
  for (std::size_t i = 0; i < NS; ++i) {
    std::int64_t bits = 0;
    if (i < k.scalars.size()) std::memcpy(&bits, &k.scalars[i].f, 8);
    p.push_back(bits);
  }
  for (auto a : ptrs) p.push_back(static_cast<std::int64_t>(a));
  p.push_back(static_cast<std::int64_t>(scratch));
  return p;
}

namespace {
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
}  // namespace

LaunchShape plan_launch(const Kernel& c, int vec, int sms, const std::vector<std::uint64_t>& ptrs) {
  LaunchShape ls;
  const std::int64_t max_blocks = static_cast<std::int64_t>(std::max(1, sms)) * 8;  // 8 x 256 threads per SM
  if (!c.is_reduction()) {
    const std::int64_t n = c.points();
    if (n == 0) return ls;
    ls.vec = vec > 0;
    for (std::size_t i = 0; ls.vec && i < ptrs.size(); ++i) {
      const KStream& st = i < c.inputs.size() ? c.inputs[i] : c.outputs[i - c.inputs.size()].stream;
      if ((i < c.inputs.size() && st.index_only) || st.strides[0] != 1) continue;
      const std::uint64_t item = itemsize(st.dtype);
      const std::uint64_t addr = ptrs[i] + static_cast<std::uint64_t>(st.offset) * item;
      ls.vec = addr % (item * static_cast<std::uint64_t>(vec)) == 0;
    }
    const std::int64_t work = ls.vec ? std::max<std::int64_t>(1, n / vec) : n;
    ls.grid = std::min(ceil_div(work, kThreadsPerBlock), max_blocks);
    return ls;
  }
  const std::int64_t n = c.outer_points(), ninner = c.inner_points();
  if (n == 0) return ls;  // no outer point: nothing to write
  bool scan = false;
  for (const KInstr& in : c.instrs) scan |= in.kind == KOp::Scan;
  if (scan || ninner <= 64 || (innermost_is_outer(c) && n >= 4096)) {
    ls.mode = LaunchShape::Mode::serial;
    ls.grid = std::min(ceil_div(n, kThreadsPerBlock), max_blocks);
    return ls;
  }
  ls.mode = LaunchShape::Mode::blocks;
  // The vector walk (the source's width `vec`, reduce_vector_width): whole
  // chunks only, and each row of every unit stream aligned to its vector.
  ls.vec = vec > 0 && ninner % vec == 0;
  const std::size_t last = c.shape.size() - 1;
  for (std::size_t i = 0; ls.vec && i < ptrs.size(); ++i) {
    const KStream& st = i < c.inputs.size() ? c.inputs[i] : c.outputs[i - c.inputs.size()].stream;
    if ((i < c.inputs.size() && st.index_only) || st.strides[last] != 1) continue;
    const std::uint64_t item = itemsize(st.dtype);
    ls.vec = (ptrs[i] + static_cast<std::uint64_t>(st.offset) * item) % (item * static_cast<std::uint64_t>(vec)) == 0;
    for (std::size_t d = 0; ls.vec && d < last; ++d) ls.vec = st.strides[d] % vec == 0;
  }
  if (n < 2 * sms) {
    // Few outer points (a full reduction has one): split the reduced range so
    // every SM gets blocks, each part at least 2048 points.
    ls.parts = std::clamp<std::int64_t>(ceil_div(4 * sms, n), 1, std::max<std::int64_t>(1, ninner / 2048));
  }
  ls.grid = std::min(n * ls.parts, max_blocks * 4);
  if (ls.parts > 1) {
    ls.finish_grid = std::min(n, max_blocks * 4);
    ls.scratch_bytes = static_cast<std::size_t>(n * ls.parts * reductions(c)) * 8;
  }
  return ls;
}

}  // namespace aj::cuda
