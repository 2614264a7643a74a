// aj::distributed::all_reduce against raw MPI_Allreduce on the same buffers,
// in the same run (issue 40 point 4). Run on 2 processes:
//
//   OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
//     mpirun --oversubscribe -np 2 build/bench/bench_distributed [--max-mib N]
//
// For each size (1 KiB .. 256 MiB of f32 per rank), alternating batches of:
//   raw  MPI_Allreduce(send, recv) from this thread (the program started MPI
//        with MPI_THREAD_MULTIPLE, so the library's thread may call it too);
//   aj   aj::eval of all_reduce(x): the plan cached, the step's agreement on
//        shapes, the exchange on the communication thread, the buffer pool.
// Wall-clock medians over batches (both ranks in lock step); bandwidth is
// the algorithm's bytes per rank / time. Rank 0 prints.
#include <mpi.h>

#include <arrayjit/arrayjit.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace dist = aj::distributed;

namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "bench_distributed: this MPI has no MPI_THREAD_MULTIPLE\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::int64_t max_mib = 256;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--max-mib") == 0) max_mib = std::atoll(argv[i + 1]);
  }
  dist::init(true);
  const int rank = dist::rank(), size = dist::size();
  if (rank == 0) {
    std::printf("all_reduce(sum) of f32 on %d processes: arrayjit (aj::eval of all_reduce) against MPI_Allreduce\n",
                size);
    std::printf("%s; MPI: %s\n", aj::jit::host_info().c_str(), "Open MPI (mpirun --oversubscribe, shared memory)");
    std::printf("%10s %12s %12s %10s %10s %8s\n", "bytes", "raw us", "aj us", "raw GB/s", "aj GB/s", "aj/raw");
  }
  for (std::int64_t bytes = 1024; bytes <= max_mib * (1 << 20); bytes *= 4) {
    const std::int64_t n = bytes / 4;
    std::vector<float> send(static_cast<std::size_t>(n)), recv(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) send[static_cast<std::size_t>(i)] = static_cast<float>((i + rank) % 7);
    aj::Array x = aj::from_vector<float>(send, aj::Shape{n});
    aj::eval({x});
    const int calls = bytes <= (1 << 16) ? 200 : bytes <= (1 << 22) ? 20 : 3;
    const int batches = bytes <= (1 << 24) ? 9 : 5;
    std::vector<double> raw, ours;
    auto run_raw = [&] {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = now_us();
      for (int c = 0; c < calls; ++c) {
        MPI_Allreduce(send.data(), recv.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
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
    const double r = median(raw), a = median(ours);
    if (rank == 0) {
      std::printf("%10lld %12.1f %12.1f %10.2f %10.2f %8.2f\n", static_cast<long long>(bytes), r, a, bytes / r * 1e-3,
                  bytes / a * 1e-3, a / r);
      std::fflush(stdout);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
