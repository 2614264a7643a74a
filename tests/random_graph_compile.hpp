// Compile mode of the random program generator (tests/random_graph.hpp):
// the program as a function of its inputs, for aj::compile
// (tests/test_compile_random_graphs.cpp). RandomGraph's class comment says
// what the mode is; here: recording a program, its inputs as arguments, the
// values of arguments, and the step with a big matmul.
//
// A recording builds the program on placeholders (zeros of the extents it
// draws: only extents and dtypes decide what a step does, and trace-time
// errors) and keeps the extents of every value it made. A replay builds the
// same program, seed and all, on the arguments it is given, taking every
// extent it decides by from the recording: at the recorded extents it makes
// the same graph, at others the same ops with the same constants (a slice's
// bounds, a reshape's target, a leaf's shape), which then fail where they
// no longer fit, as they would in any function.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tests/random_graph_generator.hpp"

namespace ajtest {

inline RandomGraph::Recording RandomGraph::record(std::uint64_t seed, int step_limit) {
  Recording rec;
  RandomGraph g(seed, step_limit);
  g.mode_ = Mode::record;
  g.recording_ = &rec;
  g.build();
  rec.program = g.log_;
  rec.used = g.used_;
  rec.steps = g.steps_;
  return rec;
}

// The extents of a value being made: read in plain mode and when recording,
// the recording's when replaying (never read from the array: see Val::d).
inline Dims RandomGraph::value_dims(const Array& a) {
  if (mode_ != Mode::replay) {
    Dims d = a.shape().dims();
    if (mode_ == Mode::record) recording_->dims.push_back(d);
    return d;
  }
  if (next_dims_ >= rec_->dims.size())
    throw std::logic_error("random graph replay: more values than the recording made (seed or step limit differ?)");
  // (At other extents the value may even have another rank, as squeeze()
  // of an extent that became 1 has: the program goes on as recorded, and
  // raises where its ops no longer fit.)
  return rec_->dims[next_dims_++];
}

// An input: the next argument (recorded: a placeholder of its spec). The
// value style is drawn from the seed, so the bound, and with it which steps
// tame the value, never depends on data.
inline RandomGraph::Val RandomGraph::compile_input(const Dims& dims, DType t) {
  const int style = uni(0, 99) < 60 ? 0 : uni(0, 99) < 75 ? 1 : 2;
  Array a;
  std::size_t index = 0;
  if (mode_ == Mode::record) {
    index = recording_->args.size();
    recording_->args.push_back(ArgSpec{dims, t, style});
    a = aj::zeros(Shape(dims), t);
  } else {
    index = next_arg_++;
    if (index >= args_.size() || index >= rec_->args.size())
      throw std::logic_error("random graph replay: the program takes more arguments than given");
    if (args_[index].dtype() != rec_->args[index].dtype)
      throw std::logic_error("random graph replay: argument " + std::to_string(index) + " has another dtype");
    a = std::move(args_[index]);  // the pool's handle is the program's only one
  }
  Bound b;
  if (t == DType::bool_) b = exact_bound(1);
  else if (aj::is_float(t)) b = style == 2 ? exact_bound(std::min(1e30, max_of(t)), true) : exact_bound(4);
  else b = exact_bound(style == 2 ? max_of(t) : 9);
  ++used_["argument"];
  ++used_[std::string("input ") + aj::dtype_name(t)];
  Val v = make_val(std::move(a), b, fresh(),
                   "arg" + std::to_string(index) + "<" + aj::dtype_name(t) + ", " + dims_str(dims) + ", style " +
                       std::to_string(style) + ">");
  v.input = true;
  return v;
}

inline Array RandomGraph::argument(const ArgSpec& spec, const Dims& dims, std::mt19937_64& rng) {
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto coin = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  const auto n = static_cast<std::size_t>(numel(dims));
  const DType t = spec.dtype;
  if (aj::is_float(t)) {
    static const double sp[] = {std::nan(""), INFINITY, -INFINITY, -0.0, 0.0, 0.5, -2.5, 1e30};
    std::vector<double> v(n);
    for (auto& x : v) {
      if (spec.style == 2 && coin(0.3)) x = sp[uni(0, 7)];
      else if (spec.style >= 1) x = uni(-8, 8) * 0.5;
      else x = std::uniform_real_distribution<double>(-4, 4)(rng);
    }
    return aj::from_vector(v, Shape(dims)).astype(t).eval();
  }
  std::vector<std::int64_t> v(n);
  for (auto& x : v) {
    if (t == DType::bool_) {
      x = coin(0.5);
    } else if (spec.style == 2 && coin(0.3)) {
      const std::int64_t lo = t == DType::i32 ? std::numeric_limits<std::int32_t>::min()
                                              : std::numeric_limits<std::int64_t>::min();
      const std::int64_t hi = t == DType::i32 ? std::numeric_limits<std::int32_t>::max()
                                              : std::numeric_limits<std::int64_t>::max();
      const std::int64_t sp[] = {lo, hi, 0, -1, 1};
      x = sp[uni(0, 4)];
    } else {
      x = uni(-9, 9);
    }
  }
  return aj::from_vector(v, Shape(dims)).astype(t).eval();
}

// A matmul of [rows, K] by [K, cols] with rows * cols near 2^14, the size
// from which the executor runs a matmul's elementwise epilogue on each
// block of the product (opt/program.hpp, kEpilogueMinElements): just below,
// at it, or above (and at other extents of a replay, on the other side);
// then an epilogue, a bias and a function, on arguments of its own.
inline void RandomGraph::step_big_matmul() {
  static const std::vector<std::pair<int, int>> sizes = {{120, 130}, {127, 129}, {128, 128}, {130, 127},
                                                         {100, 160}, {160, 104}, {64, 250},  {250, 66}};
  const auto [rows, cols] = choose(sizes);
  const std::int64_t K = uni(8, 48);
  const DType t = random_dtype(kNum);
  if (mode_ == Mode::record) recording_->big_matmul_arg = static_cast<int>(recording_->args.size());
  Val a = new_input({rows, K}, t);
  pool_.push_back(a);
  Val w = new_input({K, cols}, coin(0.7) ? t : random_dtype(kNum));
  pool_.push_back(w);
  a = prep(a);
  w = prep(w);
  const bool fl = a.is_float() || w.is_float();
  const double Kd = static_cast<double>(K);
  Bound r = exact_bound(Kd * a.b.mag * w.b.mag);
  if (fl) {
    const double eps = eps_from({a.dtype(), w.dtype()});
    r.abs_err = Kd * eps * Kd * a.b.mag * w.b.mag;
    r.rel_err = eps;
  }
  const std::string side = rows * cols >= (1 << 14) ? "matmul >= 2^14" : "matmul < 2^14";
  ++used_[side];
  Val p = temp_val(aj::matmul(a.a, w.a), r, "matmul(" + a.name + ", " + w.name + ")  // " + side);
  // The epilogue: + bias[cols], then maximum(., 0), tanh or * 0.5.
  Val bias = new_input({cols}, fl ? DType::f32 : DType::i32);
  pool_.push_back(bias);
  Bound e = r;
  e.mag += bias.b.mag;
  Array y = p.a + bias.a;
  std::string expr = p.name + " + " + bias.name;
  const int f = uni(0, 2);
  if (f == 0) {
    y = aj::maximum(y, 0);
    expr = "maximum(" + expr + ", 0)";
  } else if (f == 1 && fl) {
    y = aj::tanh(y);
    expr = "tanh(" + expr + ")";
    e.mag = 1;
    e.abs_err = e.err() + kUlps * eps_of(DType::f32);
  } else {
    y = y * 2;
    expr = "(" + expr + ") * 2";
    e.mag *= 2, e.abs_err *= 2;
  }
  place(y, e, expr, "matmul epilogue", -1);
}

}  // namespace ajtest
