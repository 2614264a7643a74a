// The heat equation u_t = u_xx on a rod [0, 1] whose ends are held at fixed
// temperatures, stepped in time with the explicit finite-difference scheme
//
//     u[j] += r * (u[j+1] - 2 u[j] + u[j-1]),   r = dt / dx^2 <= 1/2 (stable)
//
// Slices give the neighbours (views, no copies); slice_update (JAX's
// u.at[1:-1].set(...)) writes the interior and keeps the ends, and the whole
// step is one kernel (a masked load per neighbour, no temporary, in place of
// u's dead buffer where it can). The check is exact: starting from the straight line between
// the two end temperatures plus one sine mode, the scheme keeps the line and
// multiplies the mode by lambda = 1 - 4 r sin^2(pi dx / 2) each step, so after
// n steps u[j] = (1 - x[j]) + lambda^n sin(pi x[j]). A plain loop must agree too.
#include <numbers>

#include "repl.hpp"

using namespace aj;
using example::check;
using example::values;

namespace {

constexpr int kPoints = 101, kSteps = 2000;
constexpr double kR = 0.4;

// lambda^steps: how much of the sine mode is left.
double decay(int steps) {
  const double dx = 1.0 / (kPoints - 1);
  return std::pow(1 - 4 * kR * std::pow(std::sin(std::numbers::pi * dx / 2), 2), steps);
}

std::vector<double> closed_form(int steps) {
  const double dx = 1.0 / (kPoints - 1);
  std::vector<double> u;
  for (int j = 0; j < kPoints; ++j) {
    u.push_back((1 - j * dx) + decay(steps) * std::sin(std::numbers::pi * j * dx));
  }
  return u;
}

std::vector<double> by_hand(std::vector<double> u, int steps) {
  std::vector<double> next = u;
  for (int n = 0; n < steps; ++n) {
    for (std::size_t j = 1; j + 1 < u.size(); ++j) {
      next[j] = u[j] + kR * (u[j + 1] - 2 * u[j] + u[j - 1]);
    }
    std::swap(u, next);
  }
  return u;
}

}  // namespace

int main() {
  STEP(double r = kR);  // dt / dx^2
  STEP(Array x = linspace(0, 1, kPoints, DType::f64));
  STEP(Array u = (1 - x) + sin(std::numbers::pi * x));  // ends held at 1 and 0
  STEP(const std::vector<double> u0 = values(u));
  SHOW(slice(u, 0, 0, {}, 25));  // u[::25]: x = 0, 0.25, 0.5, 0.75, 1
  std::cout << ">>> for (int n = 1; n <= " << kSteps << "; ++n) {\n"
               "...   Array inner = slice(u, 0, 1, -1), left = slice(u, 0, 0, -2), right = slice(u, 0, 2, {});\n"
               "...   u = slice_update(u, {Slice(1, -1)}, inner + r * (right - 2 * inner + left));\n"
               "...   u.eval();\n"
               "... }\n";
  std::uint64_t kernels = 0;  // launched by the steps' evaluations
  for (int n = 1; n <= kSteps; ++n) {
    Array inner = slice(u, 0, 1, -1), left = slice(u, 0, 0, -2), right = slice(u, 0, 2, {});
    u = slice_update(u, {Slice(1, -1)}, inner + r * (right - 2 * inner + left));
    const std::uint64_t before = stats().kernels_launched;
    u.eval();
    kernels += stats().kernels_launched - before;
    if (n % 500 == 0) {
      std::cout << "    step " << n << ": u[::25] = " << slice(u, 0, 0, {}, 25) << "\n";
      check("step " + std::to_string(n) + " against the closed form", values(u), closed_form(n),
            1e-12, 1e-12);
    }
  }
  SHOW(kernels);  // one kernel per step
  check("one kernel per step", {static_cast<double>(kernels)}, {static_cast<double>(kSteps)}, 0);
  SHOW(u.shape());
  SHOW(max(u - (1 - x)));  // what is left of the sine mode: lambda^n
  check("sine mode left", values(max(u - (1 - x))), {decay(kSteps)}, 1e-12);
  check("2000 steps against a plain loop", values(u), by_hand(u0, kSteps), 1e-14, 1e-14);
  check("ends held fixed", {values(u).front(), values(u).back()}, {u0.front(), u0.back()}, 0);
  return example::finish();
}
