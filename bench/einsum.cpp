// einsum against the matmul calls it lowers to, written by hand, in the same
// run: equal times mean the composition (transposes, reshapes, the path)
// costs nothing beyond the BLAS call. f32, one thread, the calling thread's
// CPU time: medians of 9 rounds (each times both in turn) after a warm one. A chain shows the path: ij,jk,k->i contracted
// right to left (two matrix-vector products), against the left-to-right
// matmul a @ b @ v that a naive order would run.
//
//   einsum [--quick]
//
// 2026-11-29, znver4, OpenBLAS 0.3.21: einsum/peer 1.00 for ij,jk->ik (1024),
// bij,bjk->bik (16 x 256), bhqd,bhkd->bhqk, 1.01 for ji,jk->ik, 1.02 for
// the chain against x @ (y @ v), 0.04 of the naive (x @ y) @ v.
#include <arrayjit/arrayjit.hpp>
#include <arrayjit/einsum.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <time.h>

namespace {

// This thread's CPU time in ms (one thread runs everything here): on a
// shared machine, time spent descheduled would dominate wall time.
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// einsum and its peer timed in turn, `runs` rounds after a warm one (the
// kernels compiled, buffers in the pool).
void row(const char* what, int runs, const std::function<aj::Array()>& ours, const char* peer_name,
         const std::function<aj::Array()>& peer) {
  ours().eval();
  peer().eval();
  std::vector<double> o, p;
  for (int r = 0; r < runs; ++r) {
    for (int side = 0; side < 2; ++side) {
      const double t0 = cpu_ms();
      (side == 0 ? ours : peer)().eval();
      (side == 0 ? o : p).push_back(cpu_ms() - t0);
    }
  }
  const double mo = median(o), mp = median(p);
  std::printf("%-18s einsum %8.3f ms   %-26s %8.3f ms   einsum/peer %.2f\n", what, mo, peer_name, mp, mo / mp);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  aj::jit::set_num_threads(1);
  std::printf("%s\n", aj::jit::host_info().c_str());
  const int runs = quick ? 3 : 9;
  const std::int64_t n = quick ? 256 : 1024, b = quick ? 4 : 16, m = quick ? 64 : 256;
  using aj::Shape;
  const aj::Array x = aj::random::normal({n, n}).eval(), y = aj::random::normal({n, n}).eval();
  const aj::Array bx = aj::random::normal({b, m, m}).eval(), by = aj::random::normal({b, m, m}).eval();
  const aj::Array v = aj::random::normal({n}).eval();
  const aj::Array q = aj::random::normal({b / 2, 4, m, 64}).eval(), k = aj::random::normal({b / 2, 4, m, 64}).eval();

  row("ij,jk->ik", runs, [&] { return aj::einsum("ij,jk->ik", {x, y}); }, "matmul", [&] { return aj::matmul(x, y); });
  row("bij,bjk->bik", runs, [&] { return aj::einsum("bij,bjk->bik", {bx, by}); }, "matmul (batched)",
      [&] { return aj::matmul(bx, by); });
  row("ji,jk->ik", runs, [&] { return aj::einsum("ji,jk->ik", {x, y}); }, "matmul(x.T, y)",
      [&] { return aj::matmul(aj::transpose(x), y); });
  row("bhqd,bhkd->bhqk", runs, [&] { return aj::einsum("bhqd,bhkd->bhqk", {q, k}); }, "matmul(q, k.T)",
      [&] { return aj::matmul(q, aj::swapaxes(k, -1, -2)); });
  row("ij,jk,k->i", runs, [&] { return aj::einsum("ij,jk,k->i", {x, y, v}); }, "x @ (y @ v)",
      [&] { return aj::matmul(x, aj::matmul(y, v)); });
  row("ij,jk,k->i", runs, [&] { return aj::einsum("ij,jk,k->i", {x, y, v}); }, "(x @ y) @ v (naive order)",
      [&] { return aj::matmul(aj::matmul(x, y), v); });
  std::printf("%s", aj::einsum_path("ij,jk,k->i", {Shape{n, n}, Shape{n, n}, Shape{n}}).str().c_str());
  return 0;
}
