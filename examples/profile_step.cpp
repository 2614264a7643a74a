// Which kernel took the time: a few training steps of a small two-layer
// network recorded with aj::profile, the table of its kernels by time
// (aj::profile_summary), and the Chrome trace written to profile_step.json
// (open it in https://ui.perfetto.dev or chrome://tracing). The checks read
// the events back: every step launches the same kernels, each names the line
// of this file that traced it, and the compiles happened in the first step.
#include <map>
#include <set>

#include "repl.hpp"

using namespace aj;
using example::check;

int main() {
  STEP(random::seed(5));
  STEP(Array x = random::normal({512, 64}, 0, 1));
  STEP(Array w = random::normal({64, 32}, 0, 0.1));
  STEP(Array v = random::normal({32, 1}, 0, 0.1));
  STEP(Array y = random::normal({512, 1}, 0, 1));
  eval({x, w, v, y});
  auto loss = [](const Array& w, const Array& v, const Array& x, const Array& y) {
    Array h = tanh(matmul(x, w));
    return mean(square(matmul(h, v) - y));
  };
  const int steps = 4;
  STEP(profile p("profile_step.json"));
  for (int i = 0; i < steps; ++i) {
    profile_range r("train step");
    auto [l, g] = value_and_grad(loss, std::vector<int>{0, 1})(w, v, x, y);
    w = w - 0.1f * g[0];
    v = v - 0.1f * g[1];
    eval({l, w, v});
  }
  STEP(p.stop());
  std::cout << ">>> std::cout << profile_summary();\n" << profile_summary();

  // Read the events back.
  std::map<std::string, int> launches;  // name (where) -> calls
  int ranges = 0, compiles_after_first = 0;
  double first_step_end = 0;
  for (const ProfileEvent& e : p.events()) {
    if (e.category == "range" && ranges++ == 0) first_step_end = e.start_us + e.duration_us;
    if (e.category == "compile" && e.start_us > first_step_end) ++compiles_after_first;
    if (e.category == "kernel" || e.category == "library") ++launches[e.name + " (" + e.where + ")"];
  }
  bool every_step = !launches.empty(), lines = true;
  for (const auto& [name, calls] : launches) {
    std::cout << "    " << calls << " x " << name << "\n";
    every_step &= calls % steps == 0;
    lines &= name.find("profile_step.cpp:") != std::string::npos;
  }
  check("train steps recorded as ranges", {double(ranges)}, {double(steps)}, 0);
  check("every kernel launched the same number of times each step", {double(every_step)}, {1}, 0);
  check("every kernel names its line in this file", {double(lines)}, {1}, 0);
  check("nothing compiled after the first step", {double(compiles_after_first)}, {0}, 0);
  return example::finish();
}
