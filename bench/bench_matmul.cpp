// Host matmul: arrayjit's library step (aj::cpu::matmul, backends/cpu/
// host_matmul.hpp) against the BLASes and Eigen called directly, interleaved
// in one process. Results and the target (<= 1.05x the fastest peer):
// bench/README.md.
//
//   bench_matmul [--quick] [--sizes 256,1024,2048] [--old] [--epilogue]
//
// Peers: OpenBLAS (the library arrayjit links; called here through dlsym on the
// same loaded copy), BLIS (libblis.so.4, dlopen'ed with RTLD_DEEPBIND: it
// exports the same cblas_* names, so it cannot be linked beside OpenBLAS) and
// Eigen (compiled into this file with -O3 -march=native, OpenMP threads).
// --old adds today's path: aj::matmul evaluated by the reference interpreter
// (and i32/i64, which only it and we compute, up to 1024^2). --epilogue runs
// relu(x @ w + b) instead (epilogue_case).
//
// Each case runs R rounds; a round times every contestant in turn (the order
// rotates), each the median of several calls. Printed per contestant: the
// median over rounds and the fastest round of wall time, and on 1 thread also
// the median of the calling thread's CPU time, which leaves out time spent
// descheduled (on a shared machine that dominates wall time). The ratio ours /
// fastest peer is taken on CPU time for 1 thread and on wall time for 2.
#include <arrayjit/arrayjit.hpp>

#include <Eigen/Dense>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <time.h>

#include "backends/cpu/blas.hpp"
#include "backends/cpu/host_matmul.hpp"
#include "base/cpu_level.hpp"

#ifdef AJ_BENCH_EIGEN_LEVELS
// Eigen built for the lower levels (bench/peers/eigen_gemm.cpp).
extern "C" {
void eigen_gemm_avx2_f32(int n, const float* a, const float* b, float* c, int threads);
void eigen_gemm_avx2_f64(int n, const double* a, const double* b, double* c, int threads);
void eigen_gemm_baseline_f32(int n, const float* a, const float* b, float* c, int threads);
void eigen_gemm_baseline_f64(int n, const double* a, const double* b, double* c, int threads);
}
#endif

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRowMajor = 101, kNoTrans = 111;

template <class T>
using Gemm = void (*)(int, int, int, int, int, int, T, const T*, int, const T*, int, T, T*, int);

// A CBLAS found by dlopen: its gemms and its thread setter.
struct Blas {
  std::string name;
  Gemm<float> sgemm = nullptr;
  Gemm<double> dgemm = nullptr;
  void (*set_threads)(int) = nullptr;
  aj::cpu::IsaLevel level = aj::cpu::IsaLevel::avx512;  // the level its kernels are made for
  std::string kernel;                                    // its name for them ("Cooperlake", "skx")
  bool ok() const { return sgemm && dgemm && set_threads; }
};

Blas open_blas(const char* name, const char* soname, int flags, const char* threads_fn) {
  Blas b;
  b.name = name;
  void* h = dlopen(soname, flags);
  if (!h) return b;
  b.sgemm = reinterpret_cast<Gemm<float>>(dlsym(h, "cblas_sgemm"));
  b.dgemm = reinterpret_cast<Gemm<double>>(dlsym(h, "cblas_dgemm"));
  b.set_threads = reinterpret_cast<void (*)(int)>(dlsym(h, threads_fn));
  return b;
}

// BLIS's own name for the kernels it chose ("skx", "zen3", "haswell"; the
// environment's BLIS_ARCH_TYPE overrides its choice) and their level.
void blis_kernel(Blas& b) {
  if (!b.ok()) return;
  void* h = dlopen("libblis.so.4", RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL | RTLD_DEEPBIND);
  auto query = h ? reinterpret_cast<int (*)()>(dlsym(h, "bli_arch_query_id")) : nullptr;
  auto name = h ? reinterpret_cast<const char* (*)(int)>(dlsym(h, "bli_arch_string")) : nullptr;
  if (!query || !name) return;
  b.kernel = name(query());
  using aj::cpu::IsaLevel;
  const std::string k = b.kernel;
  if (k == "skx" || k == "knl" || k == "zen4" || k == "sapphirerapids") {
    b.level = IsaLevel::avx512;
  } else if (k == "haswell" || k == "zen" || k == "zen2" || k == "zen3" || k == "excavator") {
    b.level = IsaLevel::avx2;
  } else if (k == "sandybridge" || k == "bulldozer" || k == "piledriver" || k == "steamroller") {
    b.level = IsaLevel::avx;
  } else {
    b.level = IsaLevel::baseline;
  }
}

template <class T> void call(const Blas& b, int n, const T* A, const T* B, T* C) {
  if constexpr (sizeof(T) == 4) {
    b.sgemm(kRowMajor, kNoTrans, kNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
  } else {
    b.dgemm(kRowMajor, kNoTrans, kNoTrans, n, n, n, 1.0, A, n, B, n, 0.0, C, n);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Contestant {
  std::string name;
  // A peer's instruction-set level: a peer made for a higher level than
  // arrayjit runs at (AJ_CPU_LEVEL) is shown but not compared with.
  aj::cpu::IsaLevel level = aj::cpu::IsaLevel::baseline;
  std::function<void()> run;
  std::function<void()> prepare;  // thread setting, outside the timed calls
  std::vector<double> rounds;     // ms, the median of one round's calls (wall)
  std::vector<double> cpu_rounds; // ms, the same for this thread's CPU time
};

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// `rounds` rounds, each timing every contestant in turn (the order rotates).
//
// On 2 threads each contestant first runs untimed for `settle_ms`: the
// contestant before it may have left threads spinning (OpenBLAS's and
// libgomp's idle threads spin for milliseconds after a call), and on a
// 2-core machine they hold the core the next contestant's second thread
// needs. AJ_BENCH_SETTLE_MS changes it (0: one warm call only).
int settle_ms() {
  const char* e = std::getenv("AJ_BENCH_SETTLE_MS");
  return e ? std::atoi(e) : 300;
}

void measure(std::vector<Contestant>& cs, int rounds, int calls, int settle = 0) {
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t j = 0; j < cs.size(); ++j) {
      Contestant& c = cs[(j + static_cast<std::size_t>(r)) % cs.size()];
      c.prepare();
      c.run();  // warm: threads up, pages touched
      for (const auto warm = Clock::now(); Clock::now() - warm < std::chrono::milliseconds(settle);) c.run();
      std::vector<double> t, cpu;
      const auto start = Clock::now();
      // At most `calls`, and no more once half a second has gone (BLIS on 2
      // threads of a busy machine took 200 ms for a 256^2 product).
      for (int i = 0; i < calls && (i == 0 || Clock::now() - start < std::chrono::milliseconds(500)); ++i) {
        const auto t0 = Clock::now();
        const double c0 = thread_cpu_ms();
        c.run();
        cpu.push_back(thread_cpu_ms() - c0);
        t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      }
      c.rounds.push_back(median(t));
      c.cpu_rounds.push_back(median(cpu));
    }
  }
}

template <class T>
void run_case(int n, int threads, int rounds, int calls, const Blas& openblas, const Blas& blis, bool old) {
  std::mt19937_64 rng(static_cast<unsigned>(n * 7 + threads));
  std::uniform_real_distribution<double> u(-1, 1);
  const std::size_t nn = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  std::vector<T> A(nn), B(nn), C(nn), ref(nn);
  for (auto& x : A) x = static_cast<T>(u(rng));
  for (auto& x : B) x = static_cast<T>(u(rng));
  const aj::DType t = sizeof(T) == 4 ? aj::DType::f32 : aj::DType::f64;
  using M = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const M> ea(A.data(), n, n), eb(B.data(), n, n);
  Eigen::Map<M> ec(C.data(), n, n);

  using aj::cpu::IsaLevel;
  std::vector<Contestant> cs;
  cs.push_back({"arrayjit", aj::cpu::level(), [&] {
                  aj::cpu::matmul(t, {n, n}, n, {A.data(), 0, {n, 1}}, {B.data(), 0, {n, 1}}, C.data(), threads);
                }, [] {}, {}, {}});
  cs.push_back({"OpenBLAS " + openblas.kernel, openblas.level, [&] { call(openblas, n, A.data(), B.data(), C.data()); },
                [&] { openblas.set_threads(threads); }, {}, {}});
  if (blis.ok()) {
    cs.push_back({"BLIS " + blis.kernel, blis.level, [&] { call(blis, n, A.data(), B.data(), C.data()); },
                  [&] { blis.set_threads(threads); }, {}, {}});
  }
  cs.push_back({std::string("Eigen ") + aj::cpu::level_name(aj::cpu::detected_level()), aj::cpu::detected_level(),
                [&] { ec.noalias() = ea * eb; }, [&] { Eigen::setNbThreads(threads); }, {}, {}});
#ifdef AJ_BENCH_EIGEN_LEVELS
  // Eigen built for the level arrayjit is held to, where that is lower.
  if (aj::cpu::level() < aj::cpu::detected_level() && aj::cpu::level() != IsaLevel::avx) {
    const bool avx2 = aj::cpu::level() == IsaLevel::avx2;
    cs.push_back({std::string("Eigen ") + aj::cpu::level_name(aj::cpu::level()), aj::cpu::level(), [&, avx2] {
                    if constexpr (sizeof(T) == 4) {
                      (avx2 ? eigen_gemm_avx2_f32 : eigen_gemm_baseline_f32)(n, A.data(), B.data(), C.data(), threads);
                    } else {
                      (avx2 ? eigen_gemm_avx2_f64 : eigen_gemm_baseline_f64)(n, A.data(), B.data(), C.data(), threads);
                    }
                  }, [] {}, {}, {}});
  }
#endif
  aj::Array xa, xb;
  if (old) {
    xa = aj::from_vector(A, aj::Shape{n, n});
    xb = aj::from_vector(B, aj::Shape{n, n});
    cs.push_back({"aj::matmul (old)", IsaLevel::baseline, [&] { aj::matmul(xa, xb).eval(); }, [&] { aj::jit::set_num_threads(threads); }, {}, {}});
  }

  // Every contestant computes the same product (checked once, before timing).
  call(openblas, n, A.data(), B.data(), ref.data());
  for (auto& c : cs) {
    if (c.name.find("old") != std::string::npos) continue;
    c.prepare();
    std::fill(C.begin(), C.end(), T(0));
    c.run();
    double worst = 0;
    for (std::size_t i = 0; i < nn; ++i) worst = std::max(worst, static_cast<double>(std::abs(C[i] - ref[i])));
    if (worst > (sizeof(T) == 4 ? 1e-2 : 1e-9) * n) {
      std::printf("  %s differs from OpenBLAS by %g\n", c.name.c_str(), worst);
      std::exit(1);
    }
  }

  measure(cs, rounds, calls, threads > 1 ? settle_ms() : 0);
  // 1 thread: everything runs on this thread, so its CPU time is the cost.
  auto cost = [&](const Contestant& c) { return median(threads == 1 ? c.cpu_rounds : c.rounds); };
  double best_peer = 1e300;
  for (auto& c : cs) {
    if (c.name != "arrayjit" && c.name.find("old") == std::string::npos && c.level <= aj::cpu::level()) {
      best_peer = std::min(best_peer, cost(c));
    }
  }
  std::printf("%s %4d^2, %d thread%s:", sizeof(T) == 4 ? "f32" : "f64", n, threads, threads > 1 ? "s" : " ");
  for (auto& c : cs) {
    const double med = median(c.rounds), best = *std::min_element(c.rounds.begin(), c.rounds.end());
    std::printf("  %s%s %.3f ms (best %.3f", c.name.c_str(), c.level > aj::cpu::level() ? " [above the level]" : "",
                med, best);
    if (threads == 1) {
      std::printf(", cpu %.3f best %.3f", median(c.cpu_rounds), *std::min_element(c.cpu_rounds.begin(), c.cpu_rounds.end()));
    }
    std::printf(", %.1f GFLOP/s)", 2.0 * n * n * static_cast<double>(n) / cost(c) * 1e-6);
  }
  std::printf("  | ours / fastest peer %.3f\n", cost(cs[0]) / best_peer);
  std::fflush(stdout);
}

// relu(X @ W + b), X [m, k], W [k, n], f32: arrayjit's whole path (trace,
// plan, the matmul with its epilogue run on each block as it is computed),
// the same with the epilogue as a pass of its own (two evaluations: the
// product, then relu(p + b) in place of it), OpenBLAS followed by a hand
// loop over C (OpenMP on 2 threads), and Eigen (product, then the
// epilogue expression). Wall time on 2 threads, CPU time on 1.
void epilogue_case(int m, int k, int n, int threads, int rounds, int calls, const Blas& openblas) {
  std::mt19937_64 rng(static_cast<unsigned>(m + k + n));
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> X(static_cast<std::size_t>(m) * k), W(static_cast<std::size_t>(k) * n), bias(static_cast<std::size_t>(n)),
      C(static_cast<std::size_t>(m) * n);
  for (auto& x : X) x = u(rng);
  for (auto& x : W) x = u(rng);
  for (auto& x : bias) x = u(rng);
  const aj::Array x = aj::from_vector(X, aj::Shape{m, k}), w = aj::from_vector(W, aj::Shape{k, n}),
                  b = aj::from_vector(bias);
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const M> ex(X.data(), m, k), ew(W.data(), k, n);
  Eigen::Map<const Eigen::RowVectorXf> eb(bias.data(), n);
  Eigen::Map<M> ec(C.data(), m, n);
  volatile float sink = 0;
  std::vector<Contestant> cs;
  auto ours_threads = [threads] { aj::jit::set_num_threads(threads); };
  cs.push_back({"arrayjit", aj::cpu::IsaLevel::baseline, [&] {
                  aj::Array y = aj::maximum(aj::matmul(x, w) + b, 0.0f);
                  y.eval();
                  sink = sink + 1;
                }, ours_threads, {}, {}});
  cs.push_back({"arrayjit, epilogue apart", aj::cpu::IsaLevel::baseline, [&] {
                  aj::Array y;
                  {
                    aj::Array p = aj::matmul(x, w);
                    p.eval();
                    y = aj::maximum(p + b, 0.0f);
                  }
                  y.eval();
                  sink = sink + 1;
                }, ours_threads, {}, {}});
  cs.push_back({"OpenBLAS + loop", aj::cpu::IsaLevel::baseline, [&] {
                  openblas.sgemm(kRowMajor, kNoTrans, kNoTrans, m, n, k, 1.0f, X.data(), k, W.data(), n, 0.0f, C.data(), n);
                  float* c = C.data();
                  const float* bb = bias.data();
#pragma omp parallel for num_threads(threads) schedule(static)
                  for (int i = 0; i < m; ++i) {
                    for (int j = 0; j < n; ++j) c[i * n + j] = std::max(c[i * n + j] + bb[j], 0.0f);
                  }
                }, [&] { openblas.set_threads(threads); }, {}, {}});
  cs.push_back({"Eigen", aj::cpu::IsaLevel::baseline, [&] {
                  ec.noalias() = ex * ew;
                  ec = (ec.rowwise() + eb).cwiseMax(0.0f);
                }, [&] { Eigen::setNbThreads(threads); }, {}, {}});
  measure(cs, rounds, calls, threads > 1 ? settle_ms() : 0);
  auto cost = [&](const Contestant& c) { return median(threads == 1 ? c.cpu_rounds : c.rounds); };
  const double peer = std::min(cost(cs[2]), cost(cs[3]));
  std::printf("relu(x@w+b) f32 %dx%dx%d, %d thread%s:", m, k, n, threads, threads > 1 ? "s" : " ");
  for (auto& c : cs) std::printf("  %s %.3f ms", c.name.c_str(), cost(c));
  std::printf("  | ours / fastest peer %.3f, ours / ours apart %.3f\n", cost(cs[0]) / peer, cost(cs[0]) / cost(cs[1]));
  std::fflush(stdout);
}

// Integers have no peer that wraps as we do; printed for the record against
// today's path (the reference interpreter's triple loop), 1 thread, CPU time.
template <class T> void int_case(int n, int calls) {
  std::mt19937_64 rng(static_cast<unsigned>(n));
  const std::size_t nn = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  std::vector<T> A(nn), B(nn), C(nn);
  for (auto& x : A) x = static_cast<T>(rng());
  for (auto& x : B) x = static_cast<T>(rng());
  const aj::DType t = sizeof(T) == 4 ? aj::DType::i32 : aj::DType::i64;
  aj::Array xa = aj::from_vector(A, aj::Shape{n, n}), xb = aj::from_vector(B, aj::Shape{n, n});
  aj::jit::set_num_threads(1);
  auto cpu_median = [&](const std::function<void()>& f) {
    f();
    std::vector<double> v;
    for (int i = 0; i < calls; ++i) {
      const double c0 = thread_cpu_ms();
      f();
      v.push_back(thread_cpu_ms() - c0);
    }
    return median(v);
  };
  const double ours = cpu_median([&] {
    aj::cpu::matmul(t, {n, n}, n, {A.data(), 0, {n, 1}}, {B.data(), 0, {n, 1}}, C.data(), 1);
  });
  const double old = cpu_median([&] { aj::matmul(xa, xb).eval(); });
  std::printf("%s %4d^2, 1 thread :  arrayjit cpu %.3f ms  aj::matmul (old) cpu %.3f ms  | ours / old %.3f\n",
              sizeof(T) == 4 ? "i32" : "i64", n, ours, old, ours / old);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, old = false, epilogue = false;
  std::vector<int> sizes = {256, 1024, 2048};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--old") == 0) {
      old = true;
    } else if (std::strcmp(argv[i], "--epilogue") == 0) {
      epilogue = true;
    } else if (std::strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
      sizes.clear();
      for (char* s = std::strtok(argv[++i], ","); s; s = std::strtok(nullptr, ",")) sizes.push_back(std::atoi(s));
    } else {
      std::fprintf(stderr, "usage: bench_matmul [--quick] [--sizes 256,1024,2048] [--old] [--epilogue]\n");
      return 2;
    }
  }
  // RTLD_NOLOAD: the copy libarrayjit already loaded, so "called directly"
  // means the very library arrayjit calls.
  const Blas openblas = open_blas("OpenBLAS", "libopenblas.so.0", RTLD_NOW | RTLD_NOLOAD, "openblas_set_num_threads");
  Blas openblas_peer = openblas;
  {
    const aj::cpu::Blas own = aj::cpu::process_openblas();
    openblas_peer.kernel = own.core;
    openblas_peer.level = aj::cpu::openblas_core_level(own.core).value_or(aj::cpu::detected_level());
  }
  Blas blis = open_blas("BLIS", "libblis.so.4", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND, "bli_thread_set_num_threads");
  blis_kernel(blis);
  if (!openblas.ok()) {
    std::fprintf(stderr, "bench_matmul: libopenblas.so.0 is not loaded by libarrayjit\n");
    return 1;
  }
  std::printf("%s", aj::jit::host_info().c_str());
  std::printf("arrayjit matmul on %s; BLIS %s; Eigen %d.%d.%d\n", aj::cpu::matmul_library(),
              blis.ok() ? "libblis.so.4" : "not found (Debian: libblis4-pthread), skipped", EIGEN_WORLD_VERSION,
              EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION);
  if (epilogue) {
    // Square products, and products with a short inner axis, where C is
    // large beside the work and a pass over it costs the most.
    for (int threads : {1, 2}) {
      for (int n : sizes) {
        const int calls = n <= 256 ? (quick ? 20 : 100) : n <= 1024 ? (quick ? 3 : 7) : (quick ? 1 : 3);
        epilogue_case(n, n, n, threads, quick ? 3 : 7, calls, openblas);
        epilogue_case(n, 64, n, threads, quick ? 3 : 7, calls, openblas);
      }
    }
    return 0;
  }
  for (int threads : {1, 2}) {
    for (int n : sizes) {
      // About a second of work per contestant and round at most.
      const int calls = n <= 256 ? (quick ? 20 : 100) : n <= 1024 ? (quick ? 3 : 7) : (quick ? 1 : 3);
      const int rounds = quick ? 3 : 7;
      run_case<float>(n, threads, rounds, calls, openblas_peer, blis, old && threads == 1);
      run_case<double>(n, threads, rounds, calls, openblas_peer, blis, old && threads == 1);
    }
  }
  if (old) {
    for (int n : sizes) {
      if (n > 1024) continue;  // the old triple loop takes minutes
      int_case<std::int32_t>(n, n <= 256 ? 5 : 1);
      int_case<std::int64_t>(n, n <= 256 ? 5 : 1);
    }
  }
}
