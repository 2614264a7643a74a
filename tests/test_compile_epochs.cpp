// A training loop over minibatches sliced from one evaluated dataset
// (bench/epochs_model.hpp: i64 labels made one-hot in the step, softmax
// cross-entropy, Adam, random batch sizes and a short last batch), compiled
// and uncompiled. After the first epoch nothing is traced, planned, compiled
// or allocated from the system, and every step's loss and parameters are the
// uncompiled step's bit for bit.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "bench/epochs_model.hpp"

namespace {

bool same_bits(const aj::Array& a, const aj::Array& b) {
  const std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

void run_epochs(std::int64_t hidden) {
  const std::int64_t n = 2000, d = 16, c = 10;
  const ajepochs::Data data = ajepochs::make_data(n, d, c, 5);
  ajepochs::Params compiled = ajepochs::init_params(d, hidden, c, 6), plain = ajepochs::init_params(d, hidden, c, 6);
  auto cf = ajepochs::compiled_step(c);
  // The first epoch's batch sizes, in another order each epoch.
  std::vector<std::int64_t> sizes = ajepochs::batch_sizes(n, 16, 64, 7);
  std::mt19937 rng(8);
  for (int epoch = 0; epoch < 3; ++epoch) {
    if (epoch > 0) std::shuffle(sizes.begin(), sizes.end(), rng);
    const aj::detail::CompiledCounts counts = cf.counts();
    std::uint64_t plans = 0, compiles = 0, allocs = 0, plain_plans = 0, plain_compiles = 0, plain_allocs = 0;
    std::int64_t at = 0;
    for (std::int64_t b : sizes) {
      const aj::Array xb = aj::slice(data.X, 0, at, at + b), lb = aj::slice(data.L, 0, at, at + b);
      at += b;
      auto [c1, c2] = ajepochs::bias(++compiled.t);
      aj::Stats s0 = aj::stats();
      const aj::Array lc = ajepochs::take(compiled, cf(xb, lb, std::move(compiled.p), std::move(compiled.m),
                                                       std::move(compiled.v), c1, c2));
      aj::Stats s1 = aj::stats();
      plans += s1.plans_built - s0.plans_built;
      compiles += s1.kernels_compiled - s0.kernels_compiled;
      allocs += s1.system_allocs - s0.system_allocs;
      s0 = s1;
      ++plain.t;
      std::vector<aj::Array> r = ajepochs::step(xb, lb, plain.p, plain.m, plain.v, c1, c2, c);
      aj::eval(r);
      const aj::Array lp = ajepochs::take(plain, std::move(r));
      s1 = aj::stats();
      plain_plans += s1.plans_built - s0.plans_built;
      plain_compiles += s1.kernels_compiled - s0.kernels_compiled;
      plain_allocs += s1.system_allocs - s0.system_allocs;
      INFO("epoch " << epoch << " batch at " << at - b << " of " << b);
      REQUIRE(same_bits(lc, lp));
    }
    for (std::size_t i = 0; i < compiled.p.size(); ++i) CHECK(same_bits(compiled.p[i], plain.p[i]));
    if (epoch == 0) continue;
    // Epochs 2 and 3: the compiled step replayed every batch.
    INFO("epoch " << epoch << ": " << cf.plan_note() << cf.extents_note());
    CHECK(cf.counts().traces == counts.traces);
    CHECK(cf.counts().new_extents == counts.new_extents);
    CHECK(cf.counts().replays - counts.replays == sizes.size());
    CHECK(plans == 0);
    CHECK(compiles == 0);
    CHECK(allocs == 0);
    // The uncompiled step hits the plan cache (a batch size met at offset 0
    // for the first time is planned once: 0 is a number of its own in the
    // plan's key) and compiles and allocates nothing.
    CHECK(plain_plans <= 1);
    CHECK(plain_compiles == 0);
    CHECK(plain_allocs == 0);
  }
  // A program per batch size, kept twice: for its signature and for any
  // values of c1 and c2.
  std::vector<std::int64_t> distinct = sizes;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  CHECK(cf.counts().programs <= 2 * distinct.size() + 2);
}

}  // namespace

TEST_SUITE("compile") {

TEST_CASE("compile epochs: logistic regression over minibatch slices replays from the second epoch") {
  run_epochs(0);
}

TEST_CASE("compile epochs: an MLP 16 -> 64 -> 10 over minibatch slices replays from the second epoch") {
  run_epochs(64);
}

}  // TEST_SUITE
