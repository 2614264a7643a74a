// Op::Conv on the host (graph/library.hpp says what it computes). The column
// matrix of im2col is never made whole: for each image, group and tile of
// output points, the tile's columns (every input feature and tap of the
// group, for those points) are gathered from the strided input into a
// scratch block that stays in cache, zeros where the window is outside the
// input, and one BLAS gemm (the same OpenBLAS kernels as matmul) multiplies
// the group's weights [O / groups, I * taps] by it into the tile's columns of
// the result. Tiles are split over the host pool, each gemm single-threaded.
// The weight gradient gathers the same tiles and adds g's rows for their
// points times the columns transposed into a sum per (image, group, block of
// tiles), summed in a fixed order at the end.
#pragma once

#include <vector>

#include "graph/library.hpp"

namespace aj::cpu {

void run_conv(const LibraryCall& call, const std::vector<const void*>& inputs, void* out);

}  // namespace aj::cpu
