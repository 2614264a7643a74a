// Data-parallel training: the MLP of examples/mlp.cpp (2 -> 16 tanh -> 2,
// softmax cross-entropy, Adam) on P processes, each with 1/P of the batch,
// the gradients averaged across them with all_reduce(mean) — and, in the same
// run, the same network on the whole batch in one process, so the two loss
// curves are printed side by side and checked to agree.
//
//   mpirun -np 2 build/examples/data_parallel      (alone: a group of one)
//
// The averaging is part of the step's graph: the gradients' all_reduce is a
// step of the plan, and its 1/P scaling fuses into the Adam update after it.
#include "repl.hpp"

#include <random>

using namespace aj;
using example::check;
using example::values;
namespace dist = aj::distributed;

namespace {

constexpr int kN = 200, kHidden = 16, kClasses = 2, kSteps = 100;
constexpr double kLr = 0.02, kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;

void moons(std::vector<double>& X, std::vector<int>& y) {
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0, 0.1);
  for (int i = 0; i < kN; ++i) {
    const int c = i % 2;
    const double t = M_PI * (i / 2) / (kN / 2 - 1);
    X.push_back((c == 0 ? std::cos(t) : 1 - std::cos(t)) + noise(rng));
    X.push_back((c == 0 ? std::sin(t) : 0.5 - std::sin(t)) + noise(rng));
    y.push_back(c);
  }
}

// The mean cross-entropy of the network over (X, Y).
Array loss_of(const std::vector<Array>& p, const Array& X, const Array& Y) {
  Array h = tanh(matmul(X, p[0]) + p[1]);
  Array z = matmul(h, p[2]) + p[3];
  Array zmax = stop_gradient(max(z, 1, true));
  Array lse = log(sum(exp(z - zmax), 1, true)) + zmax;
  return mean(sum(Y * (lse - z), 1));
}

// Adam over `steps`; grads(params) gives (loss, gradients). The losses.
template <class Grads>
std::vector<double> train(std::vector<Array> params, Grads&& grads) {
  std::vector<Array> m, v;
  for (auto& p : params) m.push_back(zeros(p.shape(), DType::f64)), v.push_back(zeros(p.shape(), DType::f64));
  std::vector<double> losses;
  for (int t = 1; t <= kSteps; ++t) {
    auto [loss, g] = grads(params);
    const double c1 = 1 - std::pow(kBeta1, t), c2 = 1 - std::pow(kBeta2, t);
    std::vector<Array> all{loss};
    for (std::size_t i = 0; i < params.size(); ++i) {
      m[i] = kBeta1 * m[i] + (1 - kBeta1) * g[i];
      v[i] = kBeta2 * v[i] + (1 - kBeta2) * g[i] * g[i];
      params[i] = params[i] - kLr * (m[i] / c1) / (sqrt(v[i] / c2) + kEps);
      all.push_back(params[i]), all.push_back(m[i]), all.push_back(v[i]);
    }
    eval(all);
    losses.push_back(loss.template item<double>());
  }
  return losses;
}

}  // namespace

int main() {
  STEP(dist::Group world = dist::init());
  const int rank = world.rank(), size = world.size();
  // Rank 0 prints the session; the others only their checks' failures.
  std::ostringstream quiet;
  std::streambuf* out = std::cout.rdbuf();
  if (rank != 0) std::cout.rdbuf(quiet.rdbuf());
  std::cout << "    rank " << rank << " of " << size << "\n";

  std::vector<double> xv;
  std::vector<int> yv;
  moons(xv, yv);
  STEP(Array X = from_vector(xv, {kN, 2}));
  STEP(Array Y = (expand_dims(from_vector(yv), 1) == arange(kClasses, DType::i32)).astype(DType::f64));
  std::cout << "\n# this rank's share of the batch: rows rank, rank + size, ... (" << kN << " / size each)\n";
  if (kN % size != 0) {
    std::cout << "    the batch of " << kN << " does not split over " << size << " processes\n";
    return 1;
  }
  STEP(Array Xr = slice(X, 0, rank, kN, size));
  STEP(Array Yr = slice(Y, 0, rank, kN, size));
  STEP(random::seed(11));  // the same seed everywhere: the same initial parameters on every rank
  STEP(std::vector<Array> params = {random::normal({2, kHidden}, 0, 1, DType::f64), zeros({kHidden}, DType::f64),
                                    random::normal({kHidden, kClasses}, 0, 0.5, DType::f64),
                                    zeros({kClasses}, DType::f64)});
  STEP(eval(params));

  std::cout << "\n# each rank's gradient of its mean loss, averaged over the ranks: the full batch's gradient\n";
  STEP(auto local = value_and_grad([&](const std::vector<Array>& p) { return loss_of(p, Xr, Yr); }, {0, 1, 2, 3}));
  STEP(auto averaged = [&](const std::vector<Array>& p) {
    auto [loss, g] = local(p);
    for (Array& gi : g) gi = dist::all_reduce(gi, dist::ReduceOp::mean);
    return std::make_pair(dist::all_reduce(loss, dist::ReduceOp::mean), g);
  });
  std::cout << "\n# the same network on the whole batch in this one process, for comparison\n";
  STEP(auto whole = value_and_grad([&](const std::vector<Array>& p) { return loss_of(p, X, Y); }, {0, 1, 2, 3}));

  {
    auto [l, g] = averaged(params);
    const std::string plan = explain(g);
    int exchanges = 0;
    for (std::size_t at = plan.find("collective all_reduce"); at != std::string::npos;
         at = plan.find("collective all_reduce", at + 1)) {
      ++exchanges;
    }
    std::cout << ">>> explain(g): " << exchanges << " all_reduce steps (one per gradient) on " << size
              << " processes\n";
  }

  std::cout << "\n>>> train " << kSteps << " Adam steps both ways\n";
  const std::vector<double> parallel = train(params, averaged);
  const std::vector<double> single = train(params, whole);
  for (int t : {1, 2, 10, 50, kSteps}) {
    std::cout << "    step " << t << ": loss " << parallel[std::size_t(t - 1)] << " on " << size
              << " processes, " << single[std::size_t(t - 1)] << " on one\n";
  }
  check("the loss curves agree (" + std::to_string(kSteps) + " steps)", parallel, single, 1e-6);
  check("it learned", parallel.back() < 0.5 * parallel.front() ? 1.0 : 0.0, 1.0, 0.0);
  std::cout.rdbuf(out);
  if (rank != 0 && example::checks_failed) std::cout << quiet.str();
  return example::finish();
}
