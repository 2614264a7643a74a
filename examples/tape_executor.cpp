// A reverse-mode autodiff system of its own, with arrayjit as its executor:
// the kind of thing an autodiff library's author writes. It records ops on
// its own tape, derives the backward pass from per-op rules, and trains a
// small MLP to fit a sine.
//
// It talks to arrayjit through the C API only (<arrayjit/arrayjit.h>), as a
// library written in another language would (Python through ctypes, Rust,
// Julia, ...): handles, status codes, no C++ types cross. And the training
// step is an aj_function: arrayjit traces the tape's forward, backward and
// update on the first call and replays the recorded plan on every later one
// (the tape is not even walked again). The weights are donated, so each step
// updates them in place.
#include <arrayjit/arrayjit.h>

#include <cstring>
#include <stdexcept>

#include "repl.hpp"  // REPL-style echo and checks (and aj::stats, read from the C++ side)

namespace {

void ok(aj_status s) {
  if (s != AJ_OK) throw std::runtime_error(aj_last_error());
}

// An owned handle: released when it goes (what a binding's array object does).
class H {
 public:
  H() = default;
  explicit H(aj_array h) : h_(h) {}
  H(H&& o) noexcept : h_(o.h_) { o.h_ = aj_array{0}; }
  H& operator=(H&& o) noexcept { std::swap(h_, o.h_); return *this; }
  ~H() { aj_array_release(h_); }
  aj_array get() const { return h_; }
  aj_array take() { aj_array h = h_; h_ = aj_array{0}; return h; }
  template <class Op, class... Args>
  static H make(Op op, Args... args) {  // H::make(aj_add, a, b): out is the last argument
    aj_array out{0};
    ok(op(args..., &out));
    return H(out);
  }
 private:
  aj_array h_{0};
};

H scalar(double v) { return H::make(aj_scalar_f64, v); }
std::vector<std::int64_t> shape_of(aj_array a) {
  std::int32_t nd = 0;
  ok(aj_array_ndim(a, &nd));
  std::vector<std::int64_t> s(static_cast<std::size_t>(nd));
  ok(aj_array_shape(a, s.data(), nd));
  return s;
}
// g summed down to `shape` (undoing NumPy broadcasting).
H unbroadcast(aj_array g, const std::vector<std::int64_t>& shape) {
  const std::vector<std::int64_t> gs = shape_of(g);
  std::vector<std::int32_t> axes;
  const std::size_t lead = gs.size() - shape.size();
  for (std::size_t i = 0; i < gs.size(); ++i) {
    if (i < lead || (shape[i - lead] == 1 && gs[i] != 1)) axes.push_back(static_cast<std::int32_t>(i));
  }
  if (axes.empty()) return H::make(aj_array_retain, g);
  H s = H::make(aj_sum, g, axes.data(), static_cast<std::int32_t>(axes.size()), 0);
  return H::make(aj_reshape, s.get(), shape.data(), static_cast<std::int32_t>(shape.size()));
}

// ---- the tape -------------------------------------------------------------------
enum class Kind { Leaf, MatMul, Add, Sub, Mul, Tanh, Mean };
struct Var { int id; };

class Tape {
 public:
  Var leaf(aj_array v) { return push(Kind::Leaf, -1, -1, H::make(aj_array_retain, v)); }
  Var matmul(Var a, Var b) { return push(Kind::MatMul, a.id, b.id, H::make(aj_matmul, at(a), at(b))); }
  Var add(Var a, Var b) { return push(Kind::Add, a.id, b.id, H::make(aj_add, at(a), at(b))); }
  Var sub(Var a, Var b) { return push(Kind::Sub, a.id, b.id, H::make(aj_subtract, at(a), at(b))); }
  Var mul(Var a, Var b) { return push(Kind::Mul, a.id, b.id, H::make(aj_multiply, at(a), at(b))); }
  Var tanh(Var a) { return push(Kind::Tanh, a.id, -1, H::make(aj_tanh, at(a))); }
  Var mean(Var a) { return push(Kind::Mean, a.id, -1, H::make(aj_mean, at(a), nullptr, 0, 0)); }
  aj_array at(Var v) const { return nodes_[static_cast<std::size_t>(v.id)].value.get(); }

  // d out / d wrt for a scalar `out`: one reverse sweep, each op's
  // vector-Jacobian product applied to the gradient flowing into it.
  std::vector<H> grad(Var out, const std::vector<Var>& wrt) {
    std::vector<H> g(nodes_.size());
    g[static_cast<std::size_t>(out.id)] = H::make(aj_ones, nullptr, 0, AJ_F64);
    auto flow = [&](int to, H d) {  // accumulate, summed to the input's shape
      H shaped = unbroadcast(d.get(), shape_of(nodes_[static_cast<std::size_t>(to)].value.get()));
      H& slot = g[static_cast<std::size_t>(to)];
      slot = AJ_IS_NULL(slot.get()) ? std::move(shaped) : H::make(aj_add, slot.get(), shaped.get());
    };
    for (int i = out.id; i >= 0; --i) {
      const Node& n = nodes_[static_cast<std::size_t>(i)];
      const aj_array gi = g[static_cast<std::size_t>(i)].get();
      if (AJ_IS_NULL(gi) || n.kind == Kind::Leaf) continue;
      const aj_array a = at({n.a}), b = n.b >= 0 ? at({n.b}) : aj_array{0};
      switch (n.kind) {
        case Kind::MatMul: {  // dA = g B^T, dB = A^T g
          H bt = H::make(aj_transpose, b, nullptr, 0), at_ = H::make(aj_transpose, a, nullptr, 0);
          flow(n.a, H::make(aj_matmul, gi, bt.get()));
          flow(n.b, H::make(aj_matmul, at_.get(), gi));
          break;
        }
        case Kind::Add: flow(n.a, H::make(aj_array_retain, gi)); flow(n.b, H::make(aj_array_retain, gi)); break;
        case Kind::Sub: flow(n.a, H::make(aj_array_retain, gi)); flow(n.b, H::make(aj_negative, gi)); break;
        case Kind::Mul: flow(n.a, H::make(aj_multiply, gi, b)); flow(n.b, H::make(aj_multiply, gi, a)); break;
        case Kind::Tanh: {  // 1 - tanh^2
          H sq = H::make(aj_multiply, n.value.get(), n.value.get()), one = scalar(1.0);
          H d = H::make(aj_subtract, one.get(), sq.get());
          flow(n.a, H::make(aj_multiply, gi, d.get()));
          break;
        }
        case Kind::Mean: {  // every element gets g / size
          std::int64_t size = 0;
          ok(aj_array_size(a, &size));
          H n_ = scalar(static_cast<double>(size)), d = H::make(aj_divide, gi, n_.get());
          const auto s = shape_of(a);
          flow(n.a, H::make(aj_broadcast_to, d.get(), s.data(), static_cast<std::int32_t>(s.size())));
          break;
        }
        case Kind::Leaf: break;
      }
    }
    std::vector<H> out_grads;
    for (Var v : wrt) out_grads.push_back(std::move(g[static_cast<std::size_t>(v.id)]));
    return out_grads;
  }

 private:
  struct Node { Kind kind; int a, b; H value; };
  Var push(Kind k, int a, int b, H v) {
    nodes_.push_back({k, a, b, std::move(v)});
    return {static_cast<int>(nodes_.size() - 1)};
  }
  std::vector<Node> nodes_;
};

// ---- the model: y = tanh(x W1 + b1) W2 + b2, mean squared error ------------------
constexpr int kParams = 4, kSamples = 128, kHidden = 16, kSteps = 400;

// Inputs x, y, W1, b1, W2, b2 (and lr for the step). Records the loss and its
// gradients on a fresh tape.
struct Recorded { Tape tape; Var loss; std::vector<H> grads; };
Recorded record(const aj_array* in) {
  Recorded r;
  Tape& t = r.tape;
  Var x = t.leaf(in[0]), y = t.leaf(in[1]), p[kParams];
  for (int k = 0; k < kParams; ++k) p[k] = t.leaf(in[2 + k]);
  Var h = t.tanh(t.add(t.matmul(x, p[0]), p[1]));
  Var err = t.sub(t.add(t.matmul(h, p[2]), p[3]), y);
  r.loss = t.mean(t.mul(err, err));
  r.grads = t.grad(r.loss, {p[0], p[1], p[2], p[3]});
  return r;
}

// aj_function callbacks: they only record (arrayjit evaluates the outputs).
aj_status loss_and_grads(void*, const aj_array* in, aj_array* out) try {
  Recorded r = record(in);
  out[0] = H::make(aj_array_retain, r.tape.at(r.loss)).take();
  for (int k = 0; k < kParams; ++k) out[1 + k] = r.grads[static_cast<std::size_t>(k)].take();
  return AJ_OK;
} catch (const std::exception&) {
  return AJ_ERROR_USER;  // the message is the failing call's (aj_last_error)
}
int g_traces = 0;
aj_status sgd_step(void*, const aj_array* in, aj_array* out) try {  // outputs: new params, then loss
  ++g_traces;
  Recorded r = record(in);
  for (int k = 0; k < kParams; ++k) {
    H step = H::make(aj_multiply, in[6], r.grads[static_cast<std::size_t>(k)].get());
    out[k] = H::make(aj_subtract, in[2 + k], step.get()).take();
  }
  out[kParams] = H::make(aj_array_retain, r.tape.at(r.loss)).take();
  return AJ_OK;
} catch (const std::exception&) {
  return AJ_ERROR_USER;
}

aj_function function(aj_trace_fn fn, int n_in, int n_out, const char* name) {
  aj_function_desc d{};
  d.struct_size = sizeof d;
  d.trace = fn;
  d.n_inputs = n_in;
  d.n_outputs = n_out;
  d.name = name;
  aj_function f{0};
  ok(aj_function_new(&d, &f));
  return f;
}
H from(const std::vector<double>& v, std::vector<std::int64_t> shape) {
  return H::make(aj_array_from_data, v.data(), AJ_F64, shape.data(), static_cast<std::int32_t>(shape.size()));
}
std::vector<double> read(aj_array a) {
  std::int64_t n = 0;
  ok(aj_array_size(a, &n));
  std::vector<double> v(static_cast<std::size_t>(n));
  ok(aj_array_read(a, AJ_F64, v.data(), v.size() * sizeof(double), nullptr));
  return v;
}
double item(aj_array a) { double v = 0; ok(aj_array_item_f64(a, &v)); return v; }

}  // namespace

// The session; every handle it made is released when it returns.
void run() {
  using example::check;
  std::cout << "# data: y = 2 sin(x) + 0.5 on [-3, 3]; an MLP with " << kHidden << " tanh units\n";
  std::vector<double> xs(kSamples), ys(kSamples);
  for (int i = 0; i < kSamples; ++i) xs[std::size_t(i)] = -3 + 6.0 * i / (kSamples - 1), ys[std::size_t(i)] = 2 * std::sin(xs[std::size_t(i)]) + 0.5;
  STEP(aj_random_seed(11));
  const std::int64_t s1[2] = {1, kHidden}, s2[2] = {kHidden, 1};
  STEP(H x = from(xs, {kSamples, 1}), y = from(ys, {kSamples, 1}));
  STEP(H W1 = H::make(aj_random_normal, s1, 2, 0.0, 1.0, AJ_F64), b1 = H::make(aj_random_normal, s1 + 1, 1, 0.0, 0.5, AJ_F64));
  STEP(H W2 = H::make(aj_random_normal, s2, 2, 0.0, 0.3, AJ_F64), b2 = from({0.0}, {1}));

  std::cout << "\n# gradients from the tape against central finite differences, first step\n";
  STEP(aj_function grads = function(loss_and_grads, 6, 1 + kParams, "loss_and_grads"));
  aj_array in[7] = {x.get(), y.get(), W1.get(), b1.get(), W2.get(), b2.get(), {0}}, out[5] = {};
  ok(aj_function_call(grads, in, out));
  std::vector<H> g;
  for (aj_array& o : out) g.emplace_back(o);
  const char* names[kParams] = {"W1", "b1", "W2", "b2"};
  const double eps = 1e-6;
  for (int k = 0; k < kParams; ++k) {
    std::vector<double> p = read(in[2 + k]), fd;
    const std::vector<std::int64_t> shape = shape_of(in[2 + k]);
    for (std::size_t j = 0; j < std::min<std::size_t>(p.size(), 4); ++j) {  // a few entries of each
      double loss[2];
      for (int side = 0; side < 2; ++side) {
        std::vector<double> q = p;
        q[j] += side ? -eps : eps;
        H moved = from(q, shape);
        aj_array args[6] = {in[0], in[1], in[2], in[3], in[4], in[5]}, res[5] = {};
        args[2 + k] = moved.get();
        ok(aj_function_call(grads, args, res));
        loss[side] = item(res[0]);
        for (aj_array& r : res) aj_array_release(r);
      }
      fd.push_back((loss[0] - loss[1]) / (2 * eps));
    }
    std::vector<double> tape = read(g[std::size_t(1 + k)].get());
    tape.resize(fd.size());
    check(std::string("d loss / d ") + names[k] + " (first entries)", tape, fd, 1e-6, 1e-8);
  }

  std::cout << "\n# training: the step is an aj_function; the weights are donated and updated in place\n";
  STEP(aj_function step = function(sgd_step, 7, kParams + 1, "sgd_step"));
  STEP(H lr = scalar(0.05));
  std::cout << ">>> for (int s = 0; s < " << kSteps << "; ++s) aj_function_call_donate(step, in, donate, out);\n";
  aj::reset_stats();
  in[2] = W1.take(), in[3] = b1.take(), in[4] = W2.take(), in[5] = b2.take(), in[6] = lr.get();
  const int donate[7] = {0, 0, 1, 1, 1, 1, 0};
  std::vector<double> losses;
  for (int s = 0; s < kSteps; ++s) {
    aj_array next[kParams + 1] = {};
    ok(aj_function_call_donate(step, in, donate, next));
    for (int k = 0; k < kParams; ++k) in[2 + k] = next[k];
    H loss(next[kParams]);
    losses.push_back(item(loss.get()));
    if (s % 80 == 0 || s == kSteps - 1) std::cout << "    step " << s << ": loss " << losses.back() << "\n";
  }
  const aj::Stats st = aj::stats();
  std::cout << ">>> stats()\n    " << g_traces << " traces, " << st.compiled_replays << " replays, " << st.plans_built
            << " plans built, " << st.kernels_compiled << " kernels compiled, " << st.inplace_reuses
            << " outputs written in place\n";
  int raised = 0;
  for (std::size_t s = 1; s < losses.size(); ++s) raised += losses[s] > losses[s - 1];
  check("last loss / first loss (at most 0.1)", losses.back() / losses.front(), 0.0, 0, 0.1);
  check("steps that raised the loss", raised, 0, 0);
  check("the step is planned once (new weights never replan)", double(st.plans_built), 1.0, 0);
  check("the step is traced once, then replayed", double(st.compiled_replays), double(kSteps - 1), 0);
  for (int k = 2; k < 6; ++k) ok(aj_array_release(in[k]));
  ok(aj_function_release(step));
  ok(aj_function_release(grads));
}

int main() try {
  run();
  example::check("every handle released", double(aj_live_handles()), 0.0, 0);
  return example::finish();
} catch (const std::exception& e) {
  std::cout << "error: " << e.what() << "\n";
  return 1;
}
