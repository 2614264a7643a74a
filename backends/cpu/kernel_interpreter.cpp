#include "backends/cpu/kernel_interpreter.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "arrayjit/error.hpp"
#include "base/semantics.hpp"

namespace aj::cpu {

namespace {

using namespace aj::sem;  // the scalar semantics


template <class T>
T scalar_as(const KScalar& s) {
  if constexpr (std::is_same_v<T, bool>) return is_float(s.dtype) ? s.f != 0.0 : s.i != 0;
  else if constexpr (is_fp<T> || is_half_type<T>) return T(s.f);
  else return static_cast<T>(s.i);
}


class Interpreter {
 public:
  Interpreter(const Kernel& k, const std::vector<const void*>& in, const std::vector<void*>& out)
      : k_(k), in_(in), out_(out), nstreams_(k.inputs.size() + k.outputs.size()),
        // Up to 256 points per block, fewer for long instruction lists so the
        // value columns stay around 2 MiB.
        kBlock(std::clamp<std::int64_t>(262144 / std::max<std::int64_t>(1, static_cast<std::int64_t>(k.instrs.size())), 1, 256)),
        cols_(k.instrs.size() * kBlock), acc_(k.instrs.size()), best_(k.instrs.size()),
        offs_(nstreams_ * kBlock), base_(nstreams_, 0) {
    for (auto& s : k.inputs) streams_.push_back(&s);
    for (auto& o : k.outputs) streams_.push_back(&o.stream);
    for (int d = 0; d < static_cast<int>(k.shape.size()); ++d) {
      bool red = false;
      for (auto a : k.reduce_axes) red |= a == d;
      (red ? inner_ : outer_).push_back(d);
    }
  }

  void run() {
    if (!k_.is_reduction()) {
      for (std::size_t s = 0; s < nstreams_; ++s) base_[s] = streams_[s]->offset;
      walk_blocks(outer_, count(outer_), 0);
      return;
    }
    // Outer points one at a time: accumulate over the reduce axes in blocks,
    // then run the epilogue (phase 1) at that outer point.
    const std::int64_t nouter = count(outer_), ninner = count(inner_);
    std::vector<std::int64_t> zero(nstreams_);
    for (std::size_t s = 0; s < nstreams_; ++s) zero[s] = streams_[s]->offset;
    for (std::int64_t o = 0; o < nouter; ++o) {
      fill_offsets(outer_, o, 1, zero.data());
      for (std::size_t s = 0; s < nstreams_; ++s) base_[s] = offs_[s * kBlock];
      for (std::size_t j = 0; j < k_.instrs.size(); ++j) {
        const KInstr& in = k_.instrs[j];
        if (in.kind != KOp::Reduce && in.kind != KOp::Scan) continue;
        if (is_arg(in.op)) {
          acc_[j] = static_cast<std::uint64_t>(-1);  // no candidate yet
          continue;
        }
        visit_dtype(in.dtype, [&](auto tag) {
          using T = decltype(tag);
          *reinterpret_cast<T*>(&acc_[j]) = in.kind == KOp::Scan ? scan_identity<T>(in.op) : reduce_identity<T>(in.op);
        });
      }
      walk_blocks(inner_, ninner, 0);
      for (std::size_t s = 0; s < nstreams_; ++s) offs_[s * kBlock] = base_[s];
      eval(1, 1);
      store(1, 1);
    }
  }

 private:
  std::int64_t count(const std::vector<int>& axes) const {
    std::int64_t n = 1;
    for (int a : axes) n *= k_.shape[static_cast<std::size_t>(a)];
    return n;
  }

  void walk_blocks(const std::vector<int>& axes, std::int64_t total, int phase) {
    for (std::int64_t start = 0; start < total; start += kBlock) {
      const std::int64_t n = std::min(kBlock, total - start);
      fill_offsets(axes, start, n, base_.data());
      eval(phase, n);
      combine(start, n);
      store(phase, n);
    }
  }

  // offs_[s * kBlock + i] = element offset of stream s at the i-th point of
  // the row-major walk over `axes` starting at linear position `start`.
  void fill_offsets(const std::vector<int>& axes, std::int64_t start, std::int64_t n,
                    const std::int64_t* base) {
    const std::size_t na = axes.size();
    idx_.assign(na, 0);
    std::int64_t rest = start;
    for (std::size_t a = na; a-- > 0;) {
      const std::int64_t e = k_.shape[static_cast<std::size_t>(axes[a])];
      idx_[a] = rest % e;
      rest /= e;
    }
    cur_.assign(base, base + nstreams_);
    for (std::size_t s = 0; s < nstreams_; ++s) {
      for (std::size_t a = 0; a < na; ++a) cur_[s] += idx_[a] * streams_[s]->strides[static_cast<std::size_t>(axes[a])];
    }
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::size_t s = 0; s < nstreams_; ++s) offs_[s * kBlock + static_cast<std::size_t>(i)] = cur_[s];
      for (std::size_t a = na; a-- > 0;) {
        const auto ax = static_cast<std::size_t>(axes[a]);
        const std::int64_t e = k_.shape[ax];
        for (std::size_t s = 0; s < nstreams_; ++s) cur_[s] += streams_[s]->strides[ax];
        if (++idx_[a] < e) break;
        for (std::size_t s = 0; s < nstreams_; ++s) cur_[s] -= streams_[s]->strides[ax] * e;
        idx_[a] = 0;
      }
    }
  }

  template <class T>
  T* col(std::int32_t v) {
    return reinterpret_cast<T*>(&cols_[static_cast<std::size_t>(v) * kBlock]);
  }
  const std::int64_t* offs(std::size_t stream) const { return &offs_[stream * kBlock]; }

  void eval(int phase, std::int64_t n) {
    for (std::size_t j = 0; j < k_.instrs.size(); ++j) {
      const KInstr& in = k_.instrs[j];
      if (in.phase != phase) continue;
      const auto v = static_cast<std::int32_t>(j);
      switch (in.kind) {
        case KOp::Load:
          visit_dtype(in.dtype, [&](auto tag) {
            using T = decltype(tag);
            const T* src = static_cast<const T*>(in_[static_cast<std::size_t>(in.arg)]);
            const std::int64_t* o = offs(static_cast<std::size_t>(in.arg));
            T* dst = col<T>(v);
            const std::int64_t* dyn = in.b >= 0 ? col<std::int64_t>(in.b) : nullptr;
            const bool* mask = in.c >= 0 ? col<bool>(in.c) : nullptr;
            for (std::int64_t i = 0; i < n; ++i) {
              if (mask && !mask[i]) {
                dst[i] = T(0);  // masked off: no memory access
                continue;
              }
              dst[i] = src[o[i] + (dyn ? dyn[i] : 0)];
            }
          });
          break;
        case KOp::Position: {
          const std::int64_t* o = offs(static_cast<std::size_t>(in.arg));
          std::int64_t* dst = col<std::int64_t>(v);
          for (std::int64_t i = 0; i < n; ++i) dst[i] = o[i];
          break;
        }
        case KOp::InRange: {
          const std::int64_t* o = offs(static_cast<std::size_t>(in.arg));
          const std::int64_t lo = k_.scalars[static_cast<std::size_t>(in.a)].i, hi = k_.scalars[static_cast<std::size_t>(in.b)].i;
          bool* dst = col<bool>(v);
          for (std::int64_t i = 0; i < n; ++i) dst[i] = lo <= o[i] && o[i] < hi;
          break;
        }
        case KOp::Const:
          visit_dtype(in.dtype, [&](auto tag) {
            using T = decltype(tag);
            T x = scalar_as<T>(k_.scalars[static_cast<std::size_t>(in.arg)]);
            T* dst = col<T>(v);
            for (std::int64_t i = 0; i < n; ++i) dst[i] = x;
          });
          break;
        case KOp::Index:
          visit_dtype(in.dtype, [&](auto tag) {
            using T = decltype(tag);
            const std::int64_t* o = offs(static_cast<std::size_t>(in.arg));
            const KScalar* s = &k_.scalars[static_cast<std::size_t>(in.a)];
            T* dst = col<T>(v);
            const std::int64_t* dyn = in.b >= 0 ? col<std::int64_t>(in.b) : nullptr;
            for (std::int64_t i = 0; i < n; ++i) {
              dst[i] = sem::generate_value<T>(in.op, s[0].f, s[1].f, s[2].i, s[3].i, o[i] + (dyn ? dyn[i] : 0));
            }
          });
          break;
        case KOp::Unary: {
          const DType from = k_.instrs[static_cast<std::size_t>(in.a)].dtype;
          visit_dtype(from, [&](auto tf) {
            using F = decltype(tf);
            const F* x = col<F>(in.a);
            visit_dtype(in.dtype, [&](auto tt) {
              using T = decltype(tt);
              T* dst = col<T>(v);
              if (in.op == Op::Cast) {
                for (std::int64_t i = 0; i < n; ++i) dst[i] = convert<T>(x[i]);
              } else if constexpr (std::is_same_v<T, F>) {
                for (std::int64_t i = 0; i < n; ++i) dst[i] = unary(in.op, x[i]);
              } else {
                internal_error("kernel interpreter: unary op changes dtype");
              }
            });
          });
          break;
        }
        case KOp::Binary: {
          const DType t = k_.instrs[static_cast<std::size_t>(in.a)].dtype;
          visit_dtype(t, [&](auto tag) {
            using T = decltype(tag);
            const T* x = col<T>(in.a);
            const T* y = col<T>(in.b);
            if (is_compare(in.op)) {
              bool* dst = col<bool>(v);
              for (std::int64_t i = 0; i < n; ++i) dst[i] = compare(in.op, x[i], y[i]);
            } else {
              T* dst = col<T>(v);
              for (std::int64_t i = 0; i < n; ++i) dst[i] = binary(in.op, x[i], y[i]);
            }
          });
          break;
        }
        case KOp::Where:
          visit_dtype(in.dtype, [&](auto tag) {
            using T = decltype(tag);
            const bool* c = col<bool>(in.a);
            const T* x = col<T>(in.b);
            const T* y = col<T>(in.c);
            T* dst = col<T>(v);
            for (std::int64_t i = 0; i < n; ++i) dst[i] = c[i] ? x[i] : y[i];
          });
          break;
        case KOp::Scan:
          // The block's points are consecutive in the walk over the reduce
          // axes: the running value goes through them in order.
          visit_dtype(in.dtype, [&](auto tag) {
            using T = decltype(tag);
            T& acc = *reinterpret_cast<T*>(&acc_[j]);
            const T* x = col<T>(in.a);
            T* dst = col<T>(v);
            for (std::int64_t i = 0; i < n; ++i) dst[i] = acc = scan_combine(in.op, acc, x[i]);
          });
          break;
        case KOp::Reduce:
          // Phase 1 reads the finished accumulator.
          visit_dtype(in.dtype, [&](auto tag) {
            using T = decltype(tag);
            col<T>(v)[0] = *reinterpret_cast<T*>(&acc_[j]);
          });
          break;
      }
    }
  }

  static bool is_arg(Op op) { return op == Op::ArgMax || op == Op::ArgMin; }

  // Fold the phase-0 operands of each reduction into its accumulator, in
  // order; `start` is the block's first position over the reduce axes (an
  // arg reduction's candidate index, unless its operand b gives them).
  void combine(std::int64_t start, std::int64_t n) {
    if (!k_.is_reduction()) return;
    for (std::size_t j = 0; j < k_.instrs.size(); ++j) {
      const KInstr& in = k_.instrs[j];
      if (in.kind != KOp::Reduce) continue;
      if (is_arg(in.op)) {
        visit_dtype(k_.instrs[static_cast<std::size_t>(in.a)].dtype, [&](auto tag) {
          using T = decltype(tag);
          auto& bi = reinterpret_cast<std::int64_t&>(acc_[j]);
          T& best = *reinterpret_cast<T*>(&best_[j]);
          const T* x = col<T>(in.a);
          const std::int64_t* cand = in.b >= 0 ? col<std::int64_t>(in.b) : nullptr;
          for (std::int64_t i = 0; i < n; ++i) {
            const std::int64_t xi = cand ? cand[i] : start + i;
            if (bi < 0 || arg_take(in.op, x[i], xi, best, bi)) {
              best = x[i];
              bi = xi;
            }
          }
        });
        continue;
      }
      visit_dtype(in.dtype, [&](auto tag) {
        using T = decltype(tag);
        T& acc = *reinterpret_cast<T*>(&acc_[j]);
        const T* x = col<T>(in.a);
        for (std::int64_t i = 0; i < n; ++i) acc = reduce_combine(in.op, acc, x[i]);
      });
    }
  }

  void store(int phase, std::int64_t n) {
    for (std::size_t j = 0; j < k_.outputs.size(); ++j) {
      const KOutput& o = k_.outputs[j];
      if (o.phase != phase) continue;
      visit_dtype(o.stream.dtype, [&](auto tag) {
        using T = decltype(tag);
        T* dst = static_cast<T*>(out_[j]);
        const T* x = col<T>(o.value);
        const std::int64_t* off = offs(k_.inputs.size() + j);
        for (std::int64_t i = 0; i < n; ++i) dst[off[i]] = x[i];
      });
    }
  }

  const Kernel& k_;
  const std::vector<const void*>& in_;
  const std::vector<void*>& out_;
  std::size_t nstreams_;
  std::int64_t kBlock;
  std::vector<const KStream*> streams_;
  std::vector<int> outer_, inner_;
  std::vector<std::uint64_t> cols_;  // kBlock 8-byte slots per instruction
  std::vector<std::uint64_t> acc_;   // one accumulator per Reduce or Scan instruction (arg: the index)
  std::vector<std::uint64_t> best_;  // arg reductions: the best value so far
  std::vector<std::int64_t> offs_;
  std::vector<std::int64_t> base_, cur_, idx_;
};

}  // namespace

void run_kernel(const Kernel& k, const std::vector<const void*>& inputs,
                const std::vector<void*>& outputs) {
  if (inputs.size() != k.inputs.size() || outputs.size() != k.outputs.size()) {
    internal_error("run_kernel: wrong number of buffers");
  }
  Interpreter(k, inputs, outputs).run();
}

}  // namespace aj::cpu
