// aj::distributed::all_reduce against raw MPI_Allreduce on the same buffers,
// in the same run (issue 40 point 4). Run on 2 processes:
//
//   OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
//     mpirun --oversubscribe -np 2 build/bench/bench_distributed [--max-mib N]
//
// For each size (1 KiB .. 256 MiB of f32 per rank), alternating batches of:
//   raw  MPI_Allreduce(send, recv) from this thread (the program started MPI
//        with MPI_THREAD_MULTIPLE, so the library's thread may call it too),
//        send being x's own buffer and recv mapped as the library's pool
//        maps its buffers of 1 MiB and more;
//   aj   aj::eval of all_reduce(x): the plan cached, the step's agreement on
//        shapes, the exchange on the communication thread, the buffer pool.
// Wall-clock medians over batches (both ranks in lock step); bandwidth is
// the algorithm's bytes per rank / time. Rank 0 prints.
//
// Open MPI's all_reduce allocates a temporary per call (half the message and
// more); glibc maps and unmaps one of 32 MiB or more each time, and where page
// faults are slow (30 us each on the 2-vCPU VM) they take most of the time of
// both columns. MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 (passed
// with mpirun -x) keeps them in the heap, for both sides alike.
//
// Then a data-parallel training step (issue 40 point 4: its overlap): an MLP
// 784 -> 1024 -> 1024 -> 10 in f32, 128 rows per rank, SGD, compiled, each
// rank on one thread, timed three ways in alternating batches:
//   compute  the step without the averaging (this rank's gradients only);
//   comm     the averaging alone: average_gradients of evaluated gradients
//            of the same shapes (the buckets' copies and exchanges);
//   step     the step with average_gradients inside (buckets of 1 MiB),
//            with overlap on (aj::distributed::set_overlap: the exchanges
//            start as their gradients are made and run on the communication
//            thread while the backward pass goes on) and off (each runs
//            where the plan puts it, on the evaluating thread).
// hidden = compute + comm - step (overlap on): the communication time the
// overlap hid (negative: what it cost).
// --only-step skips the sweep; --no-step skips the step; --min-kib N and
// --max-mib N bound the sweep (1 KiB .. 256 MiB).
#include <mpi.h>
#include <sys/mman.h>

#include <arrayjit/arrayjit.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace dist = aj::distributed;

namespace {

using aj::Array;

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}


// The data-parallel step's three timings (see the top of the file).
void data_parallel_step(int rank) {
  constexpr std::int64_t kIn = 784, kHidden = 1024, kOut = 10, kRows = 128, kBucket = 1 << 20;
  aj::jit::set_num_threads(1);
  aj::random::seed(100 + static_cast<std::uint64_t>(rank));  // each rank's rows
  const Array X = aj::random::normal({kRows, kIn}, 0, 1, aj::DType::f32).eval();
  const Array Y = aj::random::normal({kRows, kOut}, 0, 1, aj::DType::f32).eval();
  aj::random::seed(7);  // the same parameters everywhere
  const std::vector<aj::Shape> shapes = {{kIn, kHidden}, {kHidden}, {kHidden, kHidden}, {kHidden}, {kHidden, kOut}, {kOut}};
  // Two copies of the same start (each step donates and updates its own).
  std::vector<Array> pa, ps;
  for (const aj::Shape& s : shapes) {
    pa.push_back(aj::random::normal(s, 0, 0.03, aj::DType::f32).eval());
    ps.push_back((pa.back() + 0.0f).eval());
  }
  const auto loss_of = [](const std::vector<Array>& p, const Array& x, const Array& y) {
    Array h = aj::maximum(aj::matmul(x, p[0]) + p[1], 0.0f);
    h = aj::maximum(aj::matmul(h, p[2]) + p[3], 0.0f);
    return aj::mean(aj::square(aj::matmul(h, p[4]) + p[5] - y));
  };
  const auto make = [&](bool average) {
    return aj::compile(
        [average, loss_of](std::vector<Array> p, const Array& x, const Array& y) {
          auto [loss, g] = aj::value_and_grad([&](const std::vector<Array>& q) { return loss_of(q, x, y); },
                                              {0, 1, 2, 3, 4, 5})(p);
          if (average) g = dist::average_gradients(g, kBucket);
          std::vector<Array> out;
          for (std::size_t i = 0; i < p.size(); ++i) out.push_back(p[i] - 0.01f * g[i]);
          return out;
        },
        {.max_allocations = 0});
  };
  auto alone = make(false), step = make(true);
  std::vector<Array> grads;
  for (const aj::Shape& s : shapes) grads.push_back(aj::random::normal(s, 0, 1, aj::DType::f32).eval());
  std::int64_t bytes = 0;
  for (const aj::Shape& s : shapes) bytes += s.numel() * 4;
  const int calls = 5, batches = 9;
  const auto timed = [&](auto&& body) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_us();
    for (int c = 0; c < calls; ++c) body();
    return (now_us() - t0) / calls * 1e-3;
  };
  const auto run_alone = [&] { pa = alone(std::move(pa), X, Y); };
  const auto run_comm = [&] { aj::eval(dist::average_gradients(grads, kBucket)); };
  const auto run_step = [&] { ps = step(std::move(ps), X, Y); };
  const bool automatic = dist::overlap();
  for (int w = 0; w < 3; ++w) run_alone(), run_comm(), run_step();  // warm: traced, planned, compiled
  const std::uint64_t allocs = aj::stats().system_allocs;
  std::vector<double> tc, tm, ts, tn;
  for (int b = 0; b < batches; ++b) {
    tc.push_back(timed(run_alone));
    tm.push_back(timed(run_comm));
    dist::set_overlap(dist::Overlap::on);
    ts.push_back(timed(run_step));
    dist::set_overlap(dist::Overlap::off);
    tn.push_back(timed(run_step));
  }
  dist::set_overlap(dist::Overlap::automatic);
  const std::uint64_t step_allocs = aj::stats().system_allocs - allocs;
  std::string plan = aj::explain(dist::average_gradients(grads, kBucket));
  int buckets = 0;
  for (std::size_t at = plan.find("collective all_reduce"); at != std::string::npos;
       at = plan.find("collective all_reduce", at + 1)) {
    ++buckets;
  }
  const double c = median(tc), m = median(tm), s = median(ts), n = median(tn);
  if (rank == 0) {
    std::printf("\ndata-parallel step: MLP 784-1024-1024-10 f32, %lld rows per rank, SGD, compiled, 1 thread per rank;\n"
                "gradients %.2f MB in %d buckets of at most 1 MiB; medians of %d batches of %d calls;\n"
                "%u hardware threads: overlap is %s by default here\n",
                static_cast<long long>(kRows), bytes * 1e-6, buckets, batches, calls,
                std::thread::hardware_concurrency(), automatic ? "on" : "off");
    std::printf("%12s %12s %14s %14s %14s\n", "compute ms", "comm ms", "step: overlap", "hidden ms (%)", "step: no overlap");
    const double hidden = c + m - s;
    std::printf("%12.2f %12.2f %14.2f %8.2f (%3.0f%%) %14.2f\n", c, m, s, hidden, 100 * hidden / std::min(c, m), n);
    std::printf("buffers from the system after warm-up (all three): %llu\n", static_cast<unsigned long long>(step_allocs));
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "bench_distributed: this MPI has no MPI_THREAD_MULTIPLE\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::int64_t max_mib = 256, min_kib = 1;
  bool sweep = true, run_step = true;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--max-mib") == 0 && i + 1 < argc) max_mib = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--min-kib") == 0 && i + 1 < argc) min_kib = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--only-step") == 0) sweep = false;
    if (std::strcmp(argv[i], "--no-step") == 0) run_step = false;
  }
  dist::init(true);
  const int rank = dist::rank(), size = dist::size();
  if (rank == 0) {
    std::printf("all_reduce(sum) of f32 on %d processes: arrayjit (aj::eval of all_reduce) against MPI_Allreduce\n",
                size);
    std::printf("%s; MPI: %s\n", aj::jit::host_info().c_str(), "Open MPI (mpirun --oversubscribe, shared memory)");
    std::printf("%10s %12s %12s %10s %10s %8s\n", "bytes", "raw us", "aj us", "raw GB/s", "aj GB/s", "aj/raw");
  }
  for (std::int64_t bytes = 1024 * min_kib; sweep && bytes <= max_mib * (1 << 20); bytes *= 4) {
    const std::int64_t n = bytes / 4;
    std::vector<float> values(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) values[static_cast<std::size_t>(i)] = static_cast<float>((i + rank) % 7);
    aj::Array x = aj::from_vector<float>(values, aj::Shape{n});
    aj::eval({x});
    // The same buffers: MPI reads x's own, and writes one mapped as the
    // library's pool maps its large buffers (backends/cpu/host_memory.cpp).
    const aj::ArrayData xd = x.data();
    const float* send = static_cast<const float*>(xd.ptr);
    const std::size_t recv_bytes = std::max<std::size_t>(static_cast<std::size_t>(bytes), 4096);
    void* mapped = bytes >= (1 << 20) ? mmap(nullptr, recv_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                                      : std::aligned_alloc(64, recv_bytes);
    float* recv = static_cast<float*>(mapped);
    std::memset(recv, 0, static_cast<std::size_t>(bytes));
    const int calls = bytes <= (1 << 16) ? 200 : bytes <= (1 << 22) ? 20 : 3;
    const int batches = bytes <= (1 << 24) ? 9 : 5;
    std::vector<double> raw, ours;
    auto run_raw = [&] {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = now_us();
      for (int c = 0; c < calls; ++c) {
        MPI_Allreduce(send, recv, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }
      return (now_us() - t0) / calls;
    };
    auto run_aj = [&] {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = now_us();
      for (int c = 0; c < calls; ++c) {
        aj::Array y = dist::all_reduce(x);
        aj::eval({y});
      }
      return (now_us() - t0) / calls;
    };
    run_raw();
    run_aj();  // warm: the plan, the pool's buffer
    for (int b = 0; b < batches; ++b) {
      raw.push_back(run_raw());
      ours.push_back(run_aj());
    }
    // Correctness of what was timed: the sum over ranks of (i + r) % 7.
    aj::Array y = dist::all_reduce(x);
    const std::vector<float> got = y.to_vector<float>();
    for (std::int64_t i = 0; i < n; i += std::max<std::int64_t>(1, n / 97)) {
      float want = 0;
      for (int r = 0; r < size; ++r) want += static_cast<float>((i + r) % 7);
      if (got[static_cast<std::size_t>(i)] != want || recv[static_cast<std::size_t>(i)] != want) {
        std::fprintf(stderr, "bench_distributed: wrong sum at %lld\n", static_cast<long long>(i));
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
    if (bytes >= (1 << 20)) {
      munmap(mapped, recv_bytes);
    } else {
      std::free(mapped);
    }
    const double r = median(raw), a = median(ours);
    if (rank == 0) {
      std::printf("%10lld %12.1f %12.1f %10.2f %10.2f %8.2f\n", static_cast<long long>(bytes), r, a, bytes / r * 1e-3,
                  bytes / a * 1e-3, a / r);
      std::fflush(stdout);
    }
  }
  if (run_step) data_parallel_step(rank);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
