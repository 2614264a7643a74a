// Saving and loading (arrayjit/io.hpp) against NumPy in the same run, on one
// f32 array of 64 MiB in the page cache (a file just written):
//  - save: aj::save / np.save (.npy); aj::save_safetensors;
//  - load to a first value: aj::load (maps the file: nothing is read) against
//    np.load (reads it all) and np.load(mmap_mode='r');
//  - load and sum every element: both read the whole file;
//  - .npz: savez_compressed and load_npz of a compressible array (zeros).
// Medians of 5 runs, wall ms. A peer column is -1 without /usr/bin/python3 and numpy.
//
//   build/bench/io
#include <arrayjit/arrayjit.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "bench_util.hpp"

int main() {
  using ajbench::command_number;
  using ajbench::wall_median_ms;
  const std::int64_t n = std::int64_t{16} << 20;  // 64 MiB of f32
  const auto dir = std::filesystem::temp_directory_path() / ("aj_bench_io_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string npy = (dir / "a.npy").string(), st = (dir / "a.safetensors").string(), npz = (dir / "z.npz").string();
  aj::random::seed(1);
  const aj::Array a = aj::random::normal({n / 1024, 1024}).eval();
  const aj::Array zeros = aj::zeros({n / 1024, 1024}).eval();
  std::printf("%s", aj::jit::host_info().c_str());
  std::printf("one f32 array of %lld MiB, in the page cache; wall ms, median of 5\n", static_cast<long long>(n * 4 >> 20));

  const double save = wall_median_ms([&] { aj::save(npy, a); }, 5);
  const double save_st = wall_median_ms([&] { aj::save_safetensors(st, {{"a", a}}); }, 5);
  const double load_first = wall_median_ms([&] {
    aj::Array b = aj::load(npy);
    (void)aj::slice(b, 0, 0, 1).to_vector<float>();  // one row: the first value
  }, 5);
  const double load_sum = wall_median_ms([&] { (void)aj::sum(aj::load(npy)).item<float>(); }, 5);
  const double load_st = wall_median_ms([&] {
    auto m = aj::load_safetensors(st);
    (void)aj::slice(m.at("a"), 0, 0, 1).to_vector<float>();
  }, 5);
  const double savez = wall_median_ms([&] { aj::savez_compressed(npz, {{"z", zeros}}); }, 5);
  const double loadz = wall_median_ms([&] { (void)aj::sum(aj::load_npz(npz).at("z")).item<float>(); }, 5);

  const std::string py = "/usr/bin/python3 -c \"import numpy as np, time\n"
                         "a = np.random.default_rng(1).standard_normal((" + std::to_string(n / 1024) + ", 1024), dtype=np.float32)\n"
                         "z = np.zeros_like(a)\n"
                         "p, q = '" + (dir / "n.npy").string() + "', '" + (dir / "n.npz").string() + "'\n"
                         "def med(f):\n"
                         "    t = []\n"
                         "    for _ in range(5):\n"
                         "        t0 = time.perf_counter(); f(); t.append((time.perf_counter() - t0) * 1e3)\n"
                         "    return sorted(t)[2]\n"
                         "np.save(p, a)\n"
                         "r = [med(lambda: np.save(p, a)), med(lambda: np.load(p)[0].copy()), "
                         "med(lambda: np.array(np.load(p, mmap_mode='r')[0])), med(lambda: np.load(p).sum()), "
                         "med(lambda: np.savez_compressed(q, z=z)), med(lambda: np.load(q)['z'].sum())]\n"
                         "print(' '.join('%.3f' % x for x in r))\n\" 2>/dev/null";
  double np_save = -1, np_first = -1, np_mmap = -1, np_sum = -1, np_savez = -1, np_loadz = -1;
  if (FILE* f = ::popen(py.c_str(), "r")) {
    if (std::fscanf(f, "%lf %lf %lf %lf %lf %lf", &np_save, &np_first, &np_mmap, &np_sum, &np_savez, &np_loadz) != 6) np_save = -1;
    ::pclose(f);
  }
  std::printf("%-44s %10s %10s\n", "", "arrayjit", "NumPy");
  std::printf("%-44s %10.3f %10.3f\n", "save .npy", save, np_save);
  std::printf("%-44s %10.3f %10s\n", "save .safetensors", save_st, "-");
  std::printf("%-44s %10.3f %10.3f\n", "load .npy, first row (NumPy: np.load)", load_first, np_first);
  std::printf("%-44s %10s %10.3f\n", "  (NumPy: np.load(mmap_mode='r'))", "", np_mmap);
  std::printf("%-44s %10.3f %10s\n", "load .safetensors, first row", load_st, "-");
  std::printf("%-44s %10.3f %10.3f\n", "load .npy and sum it", load_sum, np_sum);
  std::printf("%-44s %10.3f %10.3f\n", "savez_compressed (zeros)", savez, np_savez);
  std::printf("%-44s %10.3f %10.3f\n", "load_npz (deflated) and sum it", loadz, np_loadz);
  std::filesystem::remove_all(dir);
}
