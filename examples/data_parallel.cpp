// Data-parallel training: the MLP of examples/mlp.cpp (2 -> 16 tanh -> 2,
// softmax cross-entropy, Adam) on P processes, each with 1/P of the batch,
// the gradients averaged across them with all_reduce(mean) — and, in the same
// run, the same network on the whole batch in one process, so the two loss
// curves are printed side by side and checked to agree.
//
//   mpirun -np 2 build/examples/data_parallel      (alone: a group of one)
//
// The averaging is part of the step's graph: average_gradients packs the
// gradients into buckets, each bucket's all_reduce is a step of the plan that
// starts as soon as its gradients are made, and its 1/P scaling fuses into
// the Adam update after it. The step is compiled: after warm-up it takes no
// buffer from the system (CompileOptions::max_allocations = 0 holds it to that).
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

// One Adam step over (X, Y), compiled: the loss and gradients, the gradients
// averaged over the ranks in buckets of `bucket` bytes (average = false: this
// process alone), the update. State: parameters, first and second moments.
auto adam_step(bool average, std::int64_t bucket) {
  return compile(
      [average, bucket](std::vector<Array> p, std::vector<Array> m, std::vector<Array> v, const Array& X,
                        const Array& Y, double c1, double c2) {
        auto [loss, g] = value_and_grad([&](const std::vector<Array>& q) { return loss_of(q, X, Y); }, {0, 1, 2, 3})(p);
        if (average) {
          g = dist::average_gradients(g, bucket);
          loss = dist::all_reduce(loss, dist::ReduceOp::mean);
        }
        std::vector<Array> out;
        for (std::size_t i = 0; i < p.size(); ++i) {
          m[i] = kBeta1 * m[i] + (1 - kBeta1) * g[i];
          v[i] = kBeta2 * v[i] + (1 - kBeta2) * g[i] * g[i];
          out.push_back(p[i] - kLr * (m[i] / c1) / (sqrt(v[i] / c2) + kEps));
        }
        out.insert(out.end(), m.begin(), m.end());
        out.insert(out.end(), v.begin(), v.end());
        out.push_back(loss);
        return out;
      },
      {.max_allocations = 0});
}

// kSteps calls of a compiled step from `params` (copied) on (X, Y): the losses.
template <class Step>
example::Trained train(const std::string& name, const Step& step, const std::vector<Array>& params, const Array& X,
                       const Array& Y) {
  std::vector<Array> p, m, v;
  for (const Array& q : params) {
    p.push_back(q);  // (shared with params: the first step writes new buffers, later ones in place)
    m.push_back(zeros(q.shape(), DType::f64)), v.push_back(zeros(q.shape(), DType::f64));
  }
  return example::train_compiled(name, step, kSteps, [&](int t) {
    auto out = step(std::move(p), std::move(m), std::move(v), X, Y, 1 - std::pow(kBeta1, t), 1 - std::pow(kBeta2, t));
    p.assign(std::make_move_iterator(out.begin()), std::make_move_iterator(out.begin() + 4));
    m.assign(std::make_move_iterator(out.begin() + 4), std::make_move_iterator(out.begin() + 8));
    v.assign(std::make_move_iterator(out.begin() + 8), std::make_move_iterator(out.begin() + 12));
    return out[12].template item<double>();
  });
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
  STEP(auto [loss, g] = value_and_grad([&](const std::vector<Array>& p) { return loss_of(p, Xr, Yr); },
                                       {0, 1, 2, 3})(params));
  STEP(std::vector<Array> averaged = dist::average_gradients(g, /*bucket_bytes=*/256));
  {
    const std::string plan = explain(averaged);
    int exchanges = 0;
    for (std::size_t at = plan.find("collective all_reduce"); at != std::string::npos;
         at = plan.find("collective all_reduce", at + 1)) {
      ++exchanges;
    }
    std::cout << ">>> explain(averaged): " << exchanges << " all_reduce steps for " << g.size()
              << " gradients (buckets of 256 bytes, the last gradient first) on " << size << " processes\n";
  }

  std::cout << "\n# a compiled Adam step with the averaging inside; and the same step in this one process on the\n"
               "# whole batch, for comparison\n";
  STEP(auto parallel_step = adam_step(/*average=*/true, /*bucket=*/256));
  STEP(auto single_step = adam_step(/*average=*/false, 0));
  std::cout << "\n>>> train " << kSteps << " Adam steps both ways\n";
  const example::Trained parallel = train("parallel_step", parallel_step, params, Xr, Yr);
  const example::Trained single = train("single_step", single_step, params, X, Y);
  for (int t : {1, 2, 10, 50, kSteps}) {
    std::cout << "    step " << t << ": loss " << parallel.losses[std::size_t(t - 1)] << " on " << size
              << " processes, " << single.losses[std::size_t(t - 1)] << " on one\n";
  }
  check("the loss curves agree (" + std::to_string(kSteps) + " steps)", parallel.losses, single.losses, 1e-6);
  check("it learned", parallel.losses.back() < 0.5 * parallel.losses.front() ? 1.0 : 0.0, 1.0, 0.0);
  check("no buffer from the system after warm-up", double(parallel.system_allocs_after_warmup), 0.0, 0);
  std::cout.rdbuf(out);
  if (rank != 0 && example::checks_failed) std::cout << quiet.str();
  return example::finish();
}
