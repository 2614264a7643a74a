#include "jit/llvm/codegen.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <functional>
#include <limits>
#include <optional>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include "arrayjit/error.hpp"
#include "jit/host_kernel.hpp"
#include "jit/llvm/scalar_codegen.hpp"

namespace aj::jit {

namespace {

using llvm::Value;

class KernelCodegen {
 public:
  KernelCodegen(const Kernel& k, const std::vector<int>& alias, llvm::Module& m)
      : k_(k), alias_(alias), m_(m), c_(m.getContext()), b_(c_), sc_(b_, m),
        rank_(static_cast<int>(k.shape.size())), nin_(static_cast<int>(k.inputs.size())),
        nstreams_(nin_ + static_cast<int>(k.outputs.size())) {
    for (int d = 0; d < rank_; ++d) {
      bool red = std::find(k.reduce_axes.begin(), k.reduce_axes.end(), d) != k.reduce_axes.end();
      (red ? reduce_ : outer_).push_back(d);
    }
    if (!k.is_reduction()) mode_ = Mode::elementwise;
    else if (!reduce_.empty() && reduce_.back() == rank_ - 1) mode_ = Mode::inner_reduce;
    else mode_ = Mode::outer_reduce;
    seg_axis_ = mode_ != Mode::inner_reduce && rank_ > 0 ? rank_ - 1 : -1;
    for (const KInstr& in : k.instrs) {
      has_scan_ |= in.kind == KOp::Scan;
      arg_ |= is_arg(in);
    }
    validate();
  }

  void emit(const std::string& name) {
    i64_ = b_.getInt64Ty();
    ptr_ = b_.getPtrTy();
    auto* fty = llvm::FunctionType::get(b_.getVoidTy(), {ptr_, i64_, i64_}, false);
    f_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m_);
    f_->addFnAttr(llvm::Attribute::NoUnwind);
    f_->addFnAttr(llvm::Attribute::MustProgress);
    // Vector registers live across a SLEEF call are spilled. Without this the
    // prologue keeps the caller's 16-byte alignment and spill slots of 32- or
    // 64-byte vectors straddle cache lines in 3 of 4 processes (the stack's
    // alignment mod 64 follows ASLR): the chain exp(-x*x/2)*sin(3x)+0.5cos(x)
    // ran 17 or 28 ms per 16M f32 by process on Zen 4.
    f_->addFnAttr(llvm::Attribute::getWithStackAlignment(c_, llvm::Align(64)));
    entry_ = llvm::BasicBlock::Create(c_, "entry", f_);
    b_.SetInsertPoint(entry_);
    load_args(f_->getArg(0));
    Value* begin = f_->getArg(1);
    Value* end = f_->getArg(2);
    // Segment loop over [begin, end): begin is decomposed into the outer
    // index once (divisions), and each segment's inner loops advance it
    // along the last outer axis, carrying into the axes before it (an
    // odometer: a kernel whose rows are a few points long ran a division
    // per outer axis for every row, most of its time).
    const std::vector<Value*> first = decompose(begin);
    llvm::BasicBlock* from = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(c_, "segment", f_);
    auto* body = llvm::BasicBlock::Create(c_, "segment.body", f_);
    auto* exit = llvm::BasicBlock::Create(c_, "exit", f_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* p = b_.CreatePHI(i64_, 2, "p");
    p->addIncoming(begin, from);
    std::vector<Value*> idx(static_cast<std::size_t>(rank_), nullptr);
    std::vector<llvm::PHINode*> idx_phi;
    for (int d : outer_) {
      llvm::PHINode* phi = b_.CreatePHI(i64_, 2, "idx");
      phi->addIncoming(first[static_cast<std::size_t>(d)], from);
      idx[static_cast<std::size_t>(d)] = phi;
      idx_phi.push_back(phi);
    }
    b_.CreateCondBr(b_.CreateICmpSLT(p, end), body, exit);
    b_.SetInsertPoint(body);
    std::vector<Value*> advanced;
    Value* n = pairs() ? pair_rows_or_segment(p, end, idx, &advanced) : segment(p, end, idx);
    Value* next = b_.CreateAdd(p, n, "p.next", true, true);
    if (advanced.empty()) advanced = advance(idx, n);
    p->addIncoming(next, b_.GetInsertBlock());
    for (std::size_t a = 0; a < outer_.size(); ++a) {
      idx_phi[a]->addIncoming(advanced[static_cast<std::size_t>(outer_[a])], b_.GetInsertBlock());
    }
    b_.CreateBr(head);
    b_.SetInsertPoint(exit);
    b_.CreateRetVoid();
  }

 private:
  enum class Mode { elementwise, inner_reduce, outer_reduce };
  using Pos = std::vector<Value*>;  // element offset per stream

  static bool is_arg(const KInstr& in) {
    return in.kind == KOp::Reduce && (in.op == Op::ArgMax || in.op == Op::ArgMin);
  }
  // The dtype an accumulator holds the best value of: an arg reduction's
  // operand, else the result.
  DType value_dtype(const KInstr& in) const {
    return is_arg(in) ? k_.instrs[static_cast<std::size_t>(in.a)].dtype : in.dtype;
  }

  // --- arg reductions: (best value, index) pairs -----------------------------------------
  // With candidate indices from operand b, accumulators start at (the
  // max/min identity, INT64_MAX) and take sem::arg_take: the first candidate
  // either beats the identity or ties it with a lower index. With positions
  // (b < 0) a lane or slot sees its candidates in increasing order, so it
  // starts at (identity, its first position) and takes strictly better
  // values only: if nothing beats the identity, its first point holds the
  // identity's value (nothing is worse), and that index is the answer.
  llvm::Constant* arg_identity(const KInstr& in) {
    const DType t = value_dtype(in);
    llvm::Constant* c = sc_.identity(in.op == Op::ArgMax ? Op::ReduceMax : Op::ReduceMin, t);
    if (t != DType::bool_) return c;
    return llvm::ConstantInt::get(b_.getInt8Ty(), llvm::cast<llvm::ConstantInt>(c)->getZExtValue());
  }
  llvm::Constant* no_index() { return b_.getInt64(std::numeric_limits<std::int64_t>::max()); }

  // Is x better than y (sem::arg_better)? Floats: a NaN y is never beaten,
  // a NaN x beats any other y (fcmp ugt is true when either is NaN).
  // Integers compare signed or unsigned as their kind says.
  Value* arg_better(Op op, DType t, Value* x, Value* y) {
    const bool mx = op == Op::ArgMax;
    switch (dtype_kind(t)) {
      case DTypeKind::Bool: return mx ? b_.CreateAnd(x, b_.CreateNot(y)) : b_.CreateAnd(b_.CreateNot(x), y);
      case DTypeKind::Float: {
        Value* beats = mx ? b_.CreateFCmpUGT(x, y) : b_.CreateFCmpULT(x, y);
        return b_.CreateAnd(beats, b_.CreateFCmpORD(y, y));
      }
      case DTypeKind::Signed:
      case DTypeKind::Unsigned: return b_.CreateICmp(ScalarCodegen::int_predicate(mx ? Op::Gt : Op::Lt, t), x, y);
    }
    internal_error(std::string("jit: arg reduction of ") + dtype_name(t));
  }
  // sem::arg_take: does (x, xi) replace (best, bi)?
  Value* arg_take(Op op, DType t, Value* x, Value* xi, Value* best, Value* bi) {
    Value* tie = b_.CreateAnd(b_.CreateNot(arg_better(op, t, best, x)), b_.CreateICmpSLT(xi, bi));
    return b_.CreateOr(arg_better(op, t, x, best), tie);
  }
  // Memory form of a best value (bool as i8) and back.
  Value* to_slot(Value* v, DType t) { return t == DType::bool_ ? b_.CreateZExt(v, b_.getInt8Ty()) : v; }
  Value* from_slot(Value* v, DType t) { return t == DType::bool_ ? b_.CreateICmpNE(v, b_.getInt8(0)) : v; }

  void validate() const {
    for (std::size_t j = 0; j < k_.instrs.size(); ++j) {
      const KInstr& in = k_.instrs[j];
      for (int o : operands(in)) {
        if (o < 0) continue;
        if (o >= static_cast<int>(j)) internal_error("jit: kernel operand is not an earlier instruction");
        const KInstr& src = k_.instrs[static_cast<std::size_t>(o)];
        const bool ok = in.kind == KOp::Reduce ? src.phase == 0 : src.phase == in.phase || src.kind == KOp::Reduce;
        if (!ok) internal_error("jit: kernel instruction mixes phases");
      }
      if (in.kind == KOp::Reduce && !k_.is_reduction()) internal_error("jit: Reduce in an elementwise kernel");
      if (in.kind == KOp::Scan && (!k_.is_reduction() || in.phase != 0)) internal_error("jit: Scan outside phase 0 of a reduction kernel");
      if (is_arg(in) && (reduce_.size() != 1 || in.dtype != DType::i64)) {
        internal_error("jit: an arg reduction needs one reduce axis and an i64 result");
      }
    }
    if (alias_.size() != k_.outputs.size()) internal_error("jit: alias list of the wrong length");
  }

  // --- arguments ---------------------------------------------------------------------
  Value* field(Value* args, int k) {
    return b_.CreateLoad(ptr_, b_.CreateConstInBoundsGEP1_64(ptr_, args, static_cast<std::uint64_t>(k)));
  }
  Value* at(Value* array, std::int64_t i) {
    return b_.CreateLoad(i64_, b_.CreateConstInBoundsGEP1_64(i64_, array, static_cast<std::uint64_t>(i)));
  }
  const KStream& stream(int s) const {
    return s < nin_ ? k_.inputs[static_cast<std::size_t>(s)] : k_.outputs[static_cast<std::size_t>(s - nin_)].stream;
  }

  void load_args(Value* args) {
    Value* ptrs = field(args, 0);
    Value* shape = field(args, 1);
    Value* strides = field(args, 2);
    Value* offsets = field(args, 3);
    scalars_ = field(args, 4);
    for (int d = 0; d < rank_; ++d) ext_.push_back(at(shape, d));
    ptr_of_.assign(static_cast<std::size_t>(nstreams_), nullptr);
    off_.assign(static_cast<std::size_t>(nstreams_), nullptr);
    stride_.assign(static_cast<std::size_t>(nstreams_), std::vector<Value*>(static_cast<std::size_t>(rank_), nullptr));
    for (int s = 0; s < nstreams_; ++s) {
      const auto su = static_cast<std::size_t>(s);
      if (!stream(s).index_only) {
        ptr_of_[su] = b_.CreateLoad(ptr_, b_.CreateConstInBoundsGEP1_64(ptr_, ptrs, su));
      }
      off_[su] = at(offsets, s);
      for (int d = 0; d < rank_; ++d) {
        const std::int64_t v = stream(s).strides[static_cast<std::size_t>(d)];
        const int kind = stride_kind(v);
        stride_[su][static_cast<std::size_t>(d)] =
            kind == 0 ? nullptr : kind == 1 ? b_.getInt64(1) : at(strides, s * rank_ + d);
      }
    }
    // An output that exactly aliases an input uses the input's values, so its
    // addresses are the same SSA expressions (distance-0 dependence).
    for (std::size_t j = 0; j < alias_.size(); ++j) {
      if (alias_[j] < 0) continue;
      const auto s = static_cast<std::size_t>(nin_) + j, i = static_cast<std::size_t>(alias_[j]);
      ptr_of_[s] = ptr_of_[i];
      off_[s] = off_[i];
      stride_[s] = stride_[i];
    }
    // Constants once, at entry (scalar_as in the interpreter).
    consts_.assign(k_.instrs.size(), nullptr);
    gen_params_.assign(k_.instrs.size(), {});
    for (std::size_t j = 0; j < k_.instrs.size(); ++j) {
      const KInstr& in = k_.instrs[j];
      if (in.kind == KOp::Index) {  // a generator's four scalars (ScalarCodegen::generate)
        gen_params_[j] = {scalar_f64(in.a), scalar_f64(in.a + 1), scalar_i64(in.a + 2), scalar_i64(in.a + 3)};
        continue;
      }
      if (in.kind != KOp::Const) continue;
      const KScalar& ks = k_.scalars[static_cast<std::size_t>(in.arg)];
      Value* f = scalar_f64(in.arg);
      Value* i = scalar_i64(in.arg);
      Value* v;
      if (in.dtype == DType::bool_) v = is_float(ks.dtype) ? sc_.convert(f, DType::f64, DType::bool_) : b_.CreateICmpNE(i, b_.getInt64(0));
      else if (is_float(in.dtype)) v = sc_.convert(f, DType::f64, in.dtype);
      else v = b_.CreateTrunc(i, sc_.type(in.dtype));  // static_cast: wraps
      consts_[j] = v;
    }
  }

  // --- loops ----------------------------------------------------------------------------
  // for (i = 0; i < n; ++i) body(i); `vectorize` tags the loop for the vectorizer.
  void loop(Value* n, bool vectorize, const std::function<void(Value*)>& body) {
    loop_by(n, vectorize, [&](Value* i) {
      body(i);
      return b_.CreateAdd(i, b_.getInt64(1), "i.next", true, true);
    });
  }

  // for (i = 0; i < n; i = body(i)): the body returns the next i.
  void loop_by(Value* n, bool vectorize, const std::function<Value*(Value*)>& body) {
    auto* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(c_, "loop", f_);
    auto* bb = llvm::BasicBlock::Create(c_, "loop.body", f_);
    auto* exit = llvm::BasicBlock::Create(c_, "loop.exit", f_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* i = b_.CreatePHI(i64_, 2, "i");
    i->addIncoming(b_.getInt64(0), pre);
    b_.CreateCondBr(b_.CreateICmpSLT(i, n), bb, exit);
    b_.SetInsertPoint(bb);
    Value* next = body(i);
    i->addIncoming(next, b_.GetInsertBlock());
    llvm::BranchInst* br = b_.CreateBr(head);
    if (vectorize || scalar_loops_) {
      // Vectorized where asked; in scalar_loops_ code, neither vectorized
      // nor unrolled (a rare path kept small: LLVM's time grows with both).
      std::vector<llvm::Metadata*> ops{nullptr};
      llvm::Metadata* enable[] = {llvm::MDString::get(c_, "llvm.loop.vectorize.enable"),
                                  llvm::ConstantAsMetadata::get(scalar_loops_ ? b_.getFalse() : b_.getTrue())};
      ops.push_back(llvm::MDNode::get(c_, enable));
      if (scalar_loops_) ops.push_back(llvm::MDNode::get(c_, {llvm::MDString::get(c_, "llvm.loop.unroll.disable")}));
      llvm::MDNode* id = llvm::MDNode::getDistinct(c_, ops);
      id->replaceOperandWith(0, id);
      br->setMetadata(llvm::LLVMContext::MD_loop, id);
    }
    b_.SetInsertPoint(exit);
  }

  // pos + i * stride along axis d, per stream (a null stride is 0).
  Pos step(const Pos& pos, int d, Value* i) {
    Pos out = pos;
    for (int s = 0; s < nstreams_; ++s) {
      Value* st = stride_[static_cast<std::size_t>(s)][static_cast<std::size_t>(d)];
      if (st) out[static_cast<std::size_t>(s)] = b_.CreateAdd(pos[static_cast<std::size_t>(s)], b_.CreateMul(i, st, "", false, true), "", false, true);
    }
    return out;
  }

  // Rows a last-axis reduction reduces side by side: kInnerRows while the
  // per-element work is light (memory-bound: more streams in flight), one
  // when it is not (exp of 4 rows at once spills the 16 vector registers,
  // which made softmax's exp-and-sum kernel 2x slower). An op that costs a
  // library function (op_calls_libm: exp, sigmoid, ...) is many instructions
  // once vectorized, or a SLEEF call across which every vector register is lost.
  int inner_rows() const { return row_work() <= kInnerRowsWork ? kInnerRows : 1; }

  // The per-element work of the points reduced (phase 0): an op 1, a
  // library function 8.
  int row_work() const {
    int work = 0;
    for (const KInstr& in : k_.instrs) {
      if (in.phase != 0) continue;
      if (in.kind == KOp::Unary || in.kind == KOp::Binary || in.kind == KOp::Where) work += op_calls_libm(in.op) ? 8 : 1;
    }
    return work;
  }

  // Rows an outer-axis reduction takes per pass over its accumulator block:
  // kOuterRows for light rows (sum(x, 0): the slot's load and store are
  // most of the work), fewer as the per-row work grows, since the body is
  // generated once per row of the pass and the accumulator's traffic is
  // then a small part of each row. An Adam update fused with its bias
  // gradient's sum (about 30 ops a point) took 9 copies of its body, 160-210
  // ms of LLVM time; taken one row at a time it compiles in a fraction.
  int outer_rows() const {
    if (has_scan_) return 1;  // see outer_reduce
    return std::clamp(kOuterRowsWork / std::max(1, row_work()), 1, kOuterRows);
  }

  // Outputs per block of an outer-axis reduction: as many as kOuterAccBytes
  // of accumulators hold (a power of two, at least 64). A kernel over a
  // reduced space may have no accumulator at all (only phase-0 outputs, as
  // fusion can leave it): one byte then, so the block stays bounded.
  int outer_block() const {
    std::int64_t bytes = 0;
    for (const KInstr& in : k_.instrs) {
      if (in.kind == KOp::Reduce || in.kind == KOp::Scan) bytes += static_cast<std::int64_t>(itemsize(in.dtype));
      if (is_arg(in)) bytes += static_cast<std::int64_t>(itemsize(value_dtype(in)));
    }
    bytes = std::max<std::int64_t>(bytes, 1);
    int block = 64;
    while (block * 2 * bytes <= kOuterAccBytes) block *= 2;
    return block;
  }

  llvm::AllocaInst* entry_alloca(llvm::Type* t, int count) {
    llvm::IRBuilder<> eb(entry_, entry_->begin());
    return eb.CreateAlloca(t, count == 1 ? nullptr : eb.getInt32(static_cast<std::uint32_t>(count)));
  }

  // Outer point p (row-major over the outer axes) as an index per outer
  // axis (the first one unbounded: p may be the end).
  std::vector<Value*> decompose(Value* p) {
    std::vector<Value*> idx(static_cast<std::size_t>(rank_), nullptr);
    Value* rem = p;
    for (std::size_t a = outer_.size(); a-- > 0;) {
      const auto d = static_cast<std::size_t>(outer_[a]);
      if (a == 0) {
        idx[d] = rem;
      } else {
        idx[d] = b_.CreateURem(rem, ext_[d]);
        rem = b_.CreateUDiv(rem, ext_[d]);
      }
    }
    return idx;
  }

  // idx advanced by n points along the last outer axis: a segment never
  // passes the end of its row, so reaching the extent wraps to 0 and carries
  // one into the axis before (the first outer axis only counts up).
  // (`upto`: advance the outer axis at that position instead, the axes
  // after it unchanged.)
  std::vector<Value*> advance(const std::vector<Value*>& idx, Value* n, std::size_t upto = std::numeric_limits<std::size_t>::max()) {
    std::vector<Value*> out = idx;
    Value* inc = n;
    for (std::size_t a = std::min(upto, outer_.size() - 1) + 1; a-- > 0;) {
      const auto d = static_cast<std::size_t>(outer_[a]);
      Value* v = b_.CreateAdd(idx[d], inc, "", true, true);
      if (a == 0) {
        out[d] = v;
        break;
      }
      Value* wrap = b_.CreateICmpEQ(v, ext_[d]);
      out[d] = b_.CreateSelect(wrap, b_.getInt64(0), v);
      inc = b_.CreateZExt(wrap, i64_);
    }
    return out;
  }

  // Each stream's offset at the outer index idx.
  Pos offsets(const std::vector<Value*>& idx) {
    Pos base = off_;
    for (int d : outer_) {
      for (int s = 0; s < nstreams_; ++s) {
        Value* st = stride_[static_cast<std::size_t>(s)][static_cast<std::size_t>(d)];
        if (st) base[static_cast<std::size_t>(s)] = b_.CreateAdd(base[static_cast<std::size_t>(s)], b_.CreateMul(idx[static_cast<std::size_t>(d)], st, "", false, true), "", false, true);
      }
    }
    return base;
  }

  // Rows of two points. An elementwise kernel whose last axis is 2 long at
  // run time (max_pool 2x2's backward over [64, 8, 14, 2, 14, 2]: a stream
  // broadcast along it keeps the axis from merging with the one before) ran
  // a segment of 2 points per row: each segment's start offsets of every
  // stream, its loop and the odometer's carry for 2 points. Where a row
  // starts at a segment's start and the kernel is small (no mask ranges:
  // their walks are per segment), the segment takes the rest of the axis
  // before instead (as many rows as fit in [p, end)), both points of each
  // row written out, and advances that axis. Any other extent, or a segment
  // starting mid-row, takes segment() as before.
  // Only kernels with a stream broadcast along the last axis (pooling's and
  // upsampling's shapes; the second copy of the body costs LLVM time).
  bool pairs() const {
    if (mode_ != Mode::elementwise || seg_axis_ < 0 || outer_.size() < 2 || has_ranges() ||
        k_.instrs.size() > kShortAxisBodyLimit || scalar_loops_ || has_scan_) {
      return false;
    }
    for (int s = 0; s < nstreams_; ++s) {
      if (!stride_[static_cast<std::size_t>(s)][static_cast<std::size_t>(seg_axis_)]) return true;
    }
    return false;
  }
  Value* pair_rows_or_segment(Value* p, Value* end, const std::vector<Value*>& idx, std::vector<Value*>* advanced) {
    const auto L = static_cast<std::size_t>(seg_axis_);
    const std::size_t A = outer_.size() - 2;  // the axis before, in outer_
    const auto O = static_cast<std::size_t>(outer_[A]);
    Value* rows = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateSub(ext_[O], idx[O]),
                                           b_.CreateAShr(b_.CreateSub(end, p), b_.getInt64(1)));
    Value* go = b_.CreateAnd(b_.CreateAnd(b_.CreateICmpEQ(ext_[L], b_.getInt64(2)), b_.CreateICmpEQ(idx[L], b_.getInt64(0))),
                             b_.CreateICmpSGE(rows, b_.getInt64(2)));
    auto* two = llvm::BasicBlock::Create(c_, "pairs", f_);
    auto* other = llvm::BasicBlock::Create(c_, "segment.one", f_);
    auto* join = llvm::BasicBlock::Create(c_, "pairs.done", f_);
    b_.CreateCondBr(go, two, other);
    // Rows of two: the row at O advanced by `rows` (L stays 0).
    b_.SetInsertPoint(two);
    const Pos base = offsets(idx);
    loop(rows, false, [&](Value* r) {
      const Pos row = step(base, static_cast<int>(O), r);
      point(0, row, nullptr);
      point(0, step(row, seg_axis_, b_.getInt64(1)), nullptr);
    });
    Value* n_two = b_.CreateShl(rows, b_.getInt64(1), "", true, true);
    const std::vector<Value*> adv_two = advance(idx, rows, A);
    llvm::BasicBlock* two_end = b_.GetInsertBlock();
    b_.CreateBr(join);
    // Any other segment, as before.
    b_.SetInsertPoint(other);
    Value* n_one = segment(p, end, idx);
    const std::vector<Value*> adv_one = advance(idx, n_one);
    llvm::BasicBlock* one_end = b_.GetInsertBlock();
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
    llvm::PHINode* n = b_.CreatePHI(i64_, 2, "n");
    n->addIncoming(n_two, two_end);
    n->addIncoming(n_one, one_end);
    *advanced = idx;
    for (int d : outer_) {
      const auto du = static_cast<std::size_t>(d);
      llvm::PHINode* phi = b_.CreatePHI(i64_, 2, "idx.next");
      phi->addIncoming(adv_two[du], two_end);
      phi->addIncoming(adv_one[du], one_end);
      (*advanced)[du] = phi;
    }
    return n;
  }

  // One segment starting at outer point p, whose index per outer axis is
  // idx; returns its length.
  Value* segment(Value* p, Value* end, const std::vector<Value*>& idx) {
    const Pos base = offsets(idx);
    Value* n = b_.getInt64(1);
    if (seg_axis_ >= 0) {
      const auto L = static_cast<std::size_t>(seg_axis_);
      Value* left = b_.CreateSub(ext_[L], idx[L]);
      n = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, left, b_.CreateSub(end, p));
      if (mode_ == Mode::outer_reduce) n = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, n, b_.getInt64(outer_block()));
    }
    switch (mode_) {
      case Mode::elementwise:
        if (seg_axis_ < 0) {
          point(0, base, nullptr);
        } else if (has_ranges()) {
          range_split(base, n);
        } else {
          loop(n, true, [&](Value* j) { point(0, step(base, seg_axis_, j), nullptr); });
        }
        break;
      case Mode::inner_reduce: {
        // inner_rows() consecutive outputs at a time where the segment's
        // range and the last outer axis have that many left, else one.
        if (arg_) {
          inner_reduce_lanes(base);
          break;
        }
        const int rows = inner_rows();
        if (outer_.empty() || rows == 1) {
          inner_reduce(base, 1);
          break;
        }
        const auto O = static_cast<std::size_t>(outer_.back());
        Value* left = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateSub(ext_[O], idx[O]), b_.CreateSub(end, p));
        Value* full = b_.CreateICmpSGE(left, b_.getInt64(rows));
        n = b_.CreateSelect(full, b_.getInt64(rows), b_.getInt64(1));
        auto* many = llvm::BasicBlock::Create(c_, "rows", f_);
        auto* one = llvm::BasicBlock::Create(c_, "row", f_);
        auto* join = llvm::BasicBlock::Create(c_, "rows.done", f_);
        b_.CreateCondBr(full, many, one);
        b_.SetInsertPoint(many);
        inner_reduce(base, rows);
        b_.CreateBr(join);
        b_.SetInsertPoint(one);
        inner_reduce(base, 1);
        b_.CreateBr(join);
        b_.SetInsertPoint(join);
        break;
      }
      case Mode::outer_reduce: outer_reduce(base, n); break;
    }
    return n;
  }

  // Nested loops over the reduce axes [level, stop) (row-major), innermost
  // tagged. A window's axes (a kernel reducing two or more axes: pooling
  // over tiling windows) are often 2 long, and a loop of 2 points, the
  // innermost one tagged for a vectorizer that then only checks its trip
  // count, cost more than its loads (max_pool 2x2's forward and tie count
  // ran at 6-12% of the triad): each of the last two such axes branches on
  // its extent being 2 at run time to both points written out. Only where
  // the kernel is small: the body is emitted up to 9 times.
  void reduce_loops(std::size_t level, std::size_t stop, const Pos& pos, bool tag_innermost,
                    const std::function<void(const Pos&)>& body) {
    if (level == stop) return body(pos);
    const int d = reduce_[level];
    const bool innermost = level + 1 == stop;
    Value* extent = ext_[static_cast<std::size_t>(d)];
    auto general = [&] {
      loop(extent, innermost && tag_innermost, [&](Value* i) {
        reduce_loops(level + 1, stop, step(pos, d, i), tag_innermost, body);
      });
    };
    const bool window = reduce_.size() >= 2 && stop == reduce_.size() && level + 2 >= stop &&
                        k_.instrs.size() <= kShortAxisBodyLimit && !scalar_loops_ && !has_scan_;
    if (!window) return general();
    auto* two = llvm::BasicBlock::Create(c_, "window.two", f_);
    auto* other = llvm::BasicBlock::Create(c_, "window.loop", f_);
    auto* join = llvm::BasicBlock::Create(c_, "window.done", f_);
    b_.CreateCondBr(b_.CreateICmpEQ(extent, b_.getInt64(2)), two, other);
    b_.SetInsertPoint(two);
    for (std::int64_t i = 0; i < 2; ++i) reduce_loops(level + 1, stop, step(pos, d, b_.getInt64(i)), tag_innermost, body);
    b_.CreateBr(join);
    b_.SetInsertPoint(other);
    general();
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
  }
  // The kernels the short-axis paths (window reductions, rows of two) are
  // emitted for: their bodies are emitted more than once.
  static constexpr std::size_t kShortAxisBodyLimit = 48;  // kernel instructions

  // Reducing the last axis: a scalar accumulator per Reduce instruction
  // (promoted to a register), float sums reassociated for vectorization.
  // `rows` consecutive outputs along the last outer axis are reduced side
  // by side, each in its own accumulators: one stream per row keeps more
  // memory requests in flight than one row at a time (sum(x, 1) of f32
  // [8192, 4096] on Zen 3: 1.6x).
  void inner_reduce(const Pos& base, int rows) {
    const auto R = static_cast<std::size_t>(rows);
    auto row = [&](const Pos& pos, std::size_t r) {
      return r == 0 ? pos : step(pos, outer_.back(), b_.getInt64(static_cast<std::int64_t>(r)));
    };
    std::vector<std::vector<llvm::AllocaInst*>> acc(R, std::vector<llvm::AllocaInst*>(k_.instrs.size(), nullptr));
    for (std::size_t j = 0; j < k_.instrs.size(); ++j) {
      const KInstr& in = k_.instrs[j];
      if (in.kind != KOp::Reduce && in.kind != KOp::Scan) continue;
      for (auto& a : acc) {
        a[j] = entry_alloca(sc_.type(in.dtype), 1);
        b_.CreateStore(start_value(in), a[j]);
      }
    }
    // A scan is a recurrence the vectorizer cannot widen: its loop is left
    // untagged (a tagged loop it gives up on is a warning).
    reduce_loops(0, reduce_.size(), base, !has_scan_, [&](const Pos& pos) {
      for (std::size_t r = 0; r < R; ++r) {
        auto scan = [&](std::size_t j, Value* x) {
          const KInstr& in = k_.instrs[j];
          Value* next = sc_.op(in, in.dtype, b_.CreateLoad(sc_.type(in.dtype), acc[r][j]), x, nullptr, false);
          b_.CreateStore(next, acc[r][j]);
          return next;
        };
        std::vector<Value*> v = point(0, row(pos, r), nullptr, scan);
        accumulate(v, [&](std::size_t j) { return static_cast<Value*>(acc[r][j]); }, true);
      }
    });
    for (std::size_t r = 0; r < R; ++r) {
      point(1, row(base, r), [&](std::size_t j) {
        return static_cast<Value*>(b_.CreateLoad(sc_.type(k_.instrs[j].dtype), acc[r][j]));
      });
    }
  }

  // Reducing the last axis in a kernel with an arg reduction: kArgLanes
  // accumulators per Reduce, lane l taking the points l, l + kArgLanes, ...
  // (the loop over lanes is what the vectorizer widens: select-based
  // (value, index) updates are no reduction pattern it knows), then the lanes
  // are folded, an arg reduction keeping the lowest index among its best
  // values (sem::arg_take), so the order of the lanes does not matter. A lane
  // no point reached (a row shorter than the lanes) still holds (identity,
  // its lane number >= the row length): it loses every tie to a real one.
  void inner_reduce_lanes(const Pos& base) {
    // By positions (no candidate operand), a lane keeps the group of L
    // points its best value came from (its index: group * L + lane), one
    // broadcast a group instead of an index per lane; in a row of at most
    // index_i32_limit() points the group fits in i32, as many bits as an f32
    // value, so the lanes' (value, group) selects are half as wide as with i64.
    if (!index_branch()) {
      point(1, base, [r = lanes_reduce(base, i64_, arg_lanes())](std::size_t j) { return r[j]; });
      return;
    }
    by_index_width(ext_[static_cast<std::size_t>(reduce_[0])], [&](llvm::Type* index_t) {
      // Rows of 2^31 points or more: one lane, i64 positions, scalar code.
      std::vector<Value*> r = lanes_reduce(base, index_t, index_t == i64_ ? 1 : arg_lanes());
      point(1, base, [&](std::size_t j) { return r[j]; });
    });
  }

  // An arg reduction by positions and none with candidate indices (those
  // stay i64): the kernel branches on its reduced extent (by_index_width).
  bool index_branch() const {
    bool by_position = false, candidates = false;
    for (const KInstr& in : k_.instrs) {
      by_position |= is_arg(in) && in.b < 0;
      candidates |= is_arg(in) && in.b >= 0;
    }
    return by_position && !candidates;
  }

  // Code for an arg reduction's indices in i32 where `extent` (the reduced
  // axis) is under 2^31, the fast path; else, in i64, a scalar one
  // (scalar_loops_: not vectorized or unrolled, so it costs LLVM little).
  void by_index_width(Value* extent, const std::function<void(llvm::Type*)>& emit) {
    auto* small = llvm::BasicBlock::Create(c_, "index.i32", f_);
    auto* large = llvm::BasicBlock::Create(c_, "index.i64", f_);
    auto* join = llvm::BasicBlock::Create(c_, "index.join", f_);
    b_.CreateCondBr(b_.CreateICmpSLE(extent, b_.getInt64(index_i32_limit())), small, large);
    b_.SetInsertPoint(small);
    emit(b_.getInt32Ty());
    b_.CreateBr(join);
    b_.SetInsertPoint(large);
    scalar_loops_ = true;
    emit(i64_);
    scalar_loops_ = false;
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
  }

  // The lanes of one row reduced, per Reduce instruction its result (an
  // arg reduction's index as i64); arg reductions by position keep their
  // lanes' groups in `index_t` (i32 where the row is shorter than 2^31).
  std::vector<Value*> lanes_reduce(const Pos& base, llvm::Type* index_t, int lanes) {
    const std::size_t ni = k_.instrs.size();
    std::vector<llvm::AllocaInst*> acc(ni, nullptr), best(ni, nullptr);
    auto at = [&](llvm::AllocaInst* a, llvm::Type* t, Value* l) { return b_.CreateInBoundsGEP(t, a, l); };
    auto acc_type = [&](const KInstr& in) { return is_arg(in) && in.b < 0 ? index_t : sc_.type(in.dtype); };
    auto narrow = [&](Value* v) { return v->getType() == index_t ? v : b_.CreateTrunc(v, index_t); };
    Value* L = b_.getInt64(lanes);
    for (std::size_t j = 0; j < ni; ++j) {
      const KInstr& in = k_.instrs[j];
      if (in.kind != KOp::Reduce) continue;
      acc[j] = entry_alloca(acc_type(in), lanes);
      if (is_arg(in)) best[j] = entry_alloca(sc_.mem_type(value_dtype(in)), lanes);
    }
    loop(L, true, [&](Value* l) {
      for (std::size_t j = 0; j < ni; ++j) {
        const KInstr& in = k_.instrs[j];
        if (!acc[j]) continue;
        if (best[j]) {
          Value* none = in.b >= 0 ? static_cast<Value*>(no_index()) : llvm::ConstantInt::get(index_t, 0);
          b_.CreateStore(none, at(acc[j], acc_type(in), l));
          b_.CreateStore(arg_identity(in), at(best[j], sc_.mem_type(value_dtype(in)), l));
        } else {
          b_.CreateStore(sc_.identity(in.op, in.dtype), at(acc[j], sc_.type(in.dtype), l));
        }
      }
    });
    const int d = reduce_[0];
    // i: the position along the row, group its group of L (in index_t).
    auto update = [&](Value* l, Value* i, Value* group) {
      std::vector<Value*> v = point(0, step(base, d, i), nullptr);
      for (std::size_t j = 0; j < ni; ++j) {
        const KInstr& in = k_.instrs[j];
        if (!acc[j]) continue;
        Value* x = v[static_cast<std::size_t>(in.a)];
        Value* ap = at(acc[j], acc_type(in), l);
        Value* cur = b_.CreateLoad(acc_type(in), ap);
        if (best[j]) {
          const DType t = value_dtype(in);
          Value* bp = at(best[j], sc_.mem_type(t), l);
          Value* cur_best = from_slot(b_.CreateLoad(sc_.mem_type(t), bp), t);
          Value* xi = in.b >= 0 ? v[static_cast<std::size_t>(in.b)] : group;
          Value* take = in.b >= 0 ? arg_take(in.op, t, x, xi, cur_best, cur) : arg_better(in.op, t, x, cur_best);
          b_.CreateStore(to_slot(b_.CreateSelect(take, x, cur_best), t), bp);
          b_.CreateStore(b_.CreateSelect(take, xi, cur), ap);
        } else {
          b_.CreateStore(sc_.op(in, in.dtype, cur, x, nullptr, true), ap);
        }
      }
    };
    Value* ext = ext_[static_cast<std::size_t>(d)];
    Value* groups = b_.CreateUDiv(ext, L);
    loop(groups, false, [&](Value* g) {
      Value* first = b_.CreateMul(g, L, "", true, true);
      Value* group = narrow(g);
      loop(L, true, [&](Value* l) { update(l, b_.CreateAdd(first, l, "", true, true), group); });
    });
    Value* done = b_.CreateMul(groups, L, "", true, true);
    Value* last = narrow(groups);
    loop(b_.CreateSub(ext, done), false, [&](Value* r) { update(r, b_.CreateAdd(done, r, "", true, true), last); });
    // Fold the lanes.
    std::vector<Value*> result(ni, nullptr);
    for (std::size_t j = 0; j < ni; ++j) {
      const KInstr& in = k_.instrs[j];
      if (!acc[j]) continue;
      llvm::Type* at_t = acc_type(in);
      // An arg reduction by positions keeps each lane's group: its index is
      // group * L + lane.
      auto index_of = [&](int l) -> Value* {
        Value* v = b_.CreateLoad(at_t, at(acc[j], at_t, b_.getInt64(l)));
        if (!best[j] || in.b >= 0) return v;
        if (v->getType() != i64_) v = b_.CreateSExt(v, i64_);
        return b_.CreateAdd(b_.CreateMul(v, L, "", true, true), b_.getInt64(l), "", true, true);
      };
      Value* r = index_of(0);
      const DType t = value_dtype(in);
      Value* rb = best[j] ? from_slot(b_.CreateLoad(sc_.mem_type(t), at(best[j], sc_.mem_type(t), b_.getInt64(0))), t) : nullptr;
      for (int l = 1; l < lanes; ++l) {
        Value* x = index_of(l);
        if (!best[j]) {
          r = sc_.op(in, in.dtype, r, x, nullptr, true);
          continue;
        }
        Value* xb = from_slot(b_.CreateLoad(sc_.mem_type(t), at(best[j], sc_.mem_type(t), b_.getInt64(l))), t);
        Value* take = arg_take(in.op, t, xb, x, rb, r);
        rb = b_.CreateSelect(take, xb, rb);
        r = b_.CreateSelect(take, x, r);
      }
      result[j] = r;
    }
    return result;
  }

  // Lanes of inner_reduce_lanes: 64 bytes of the widest accumulated value.
  int arg_lanes() const {
    std::size_t widest = 1;
    for (const KInstr& in : k_.instrs) {
      if (in.kind == KOp::Reduce) widest = std::max(widest, itemsize(value_dtype(in)));
    }
    return widest >= 8 ? kArgLanes / 2 : kArgLanes;
  }

  // Reducing outer axes: up to kOuterBlock outputs along the last axis at a
  // time, one accumulator slot each (the block stays in L1 while rows stream
  // through); the inner loop runs along the row. The innermost reduced axis
  // is unrolled by kOuterRows: each slot is loaded once, takes that many rows
  // in order, and is stored once, so the row streams are read side by side
  // and each output is still summed in row-major order (bit-exact).
  void outer_reduce(const Pos& base, Value* n) {
    // An arg reduction by positions keeps the row it took in i32 where the
    // reduced axis is shorter than 2^31 (half the width of i64 to select,
    // load and store per slot); a run-time branch on that extent.
    if (!index_branch()) {
      outer_reduce_rows(base, n, i64_);
      return;
    }
    by_index_width(ext_[static_cast<std::size_t>(reduce_.back())],
                   [&](llvm::Type* index_t) { outer_reduce_rows(base, n, index_t); });
  }

  // outer_reduce with an arg reduction's rows by position in `index_t`.
  void outer_reduce_rows(const Pos& base, Value* n, llvm::Type* index_t) {
    // acc: the accumulator (an arg reduction's index); best: an arg
    // reduction's best value.
    std::vector<llvm::AllocaInst*> acc(k_.instrs.size(), nullptr), best(k_.instrs.size(), nullptr);
    const int L = seg_axis_;
    auto acc_type = [&](std::size_t j) {
      const KInstr& in = k_.instrs[j];
      return is_arg(in) && in.b < 0 ? index_t : sc_.type(in.dtype);
    };
    auto slot = [&](std::size_t j, Value* i) { return b_.CreateInBoundsGEP(acc_type(j), acc[j], i); };
    auto best_slot = [&](std::size_t j, Value* i) {
      return b_.CreateInBoundsGEP(sc_.mem_type(value_dtype(k_.instrs[j])), best[j], i);
    };
    for (std::size_t j = 0; j < k_.instrs.size(); ++j) {
      const KInstr& in = k_.instrs[j];
      if (in.kind != KOp::Reduce && in.kind != KOp::Scan) continue;
      acc[j] = entry_alloca(acc_type(j), outer_block());
      if (is_arg(in)) {
        best[j] = entry_alloca(sc_.mem_type(value_dtype(in)), outer_block());
        loop(n, true, [&](Value* i) {
          b_.CreateStore(in.b >= 0 ? no_index() : llvm::ConstantInt::get(index_t, 0), slot(j, i));
          b_.CreateStore(arg_identity(in), best_slot(j, i));
        });
        continue;
      }
      loop(n, true, [&](Value* i) { b_.CreateStore(start_value(in), slot(j, i)); });
    }
    // `rows` consecutive rows of the innermost reduced axis from `first`.
    const int d = reduce_.back();
    auto rows = [&](const Pos& pos, Value* first, int count) {
      loop(n, true, [&](Value* i) {
        std::vector<Value*> cur(k_.instrs.size(), nullptr), cur_best(k_.instrs.size(), nullptr);
        for (std::size_t j = 0; j < k_.instrs.size(); ++j) {
          if (acc[j]) cur[j] = b_.CreateLoad(acc_type(j), slot(j, i));
          if (best[j]) {
            const DType t = value_dtype(k_.instrs[j]);
            cur_best[j] = from_slot(b_.CreateLoad(sc_.mem_type(t), best_slot(j, i)), t);
          }
        }
        auto scan = [&](std::size_t j, Value* x) {
          const KInstr& in = k_.instrs[j];
          return cur[j] = sc_.op(in, in.dtype, cur[j], x, nullptr, false);
        };
        for (int r = 0; r < count; ++r) {
          Value* row = b_.CreateAdd(first, b_.getInt64(r), "", true, true);
          std::vector<Value*> v = point(0, step(step(pos, d, row), L, i), nullptr, scan);
          for (std::size_t j = 0; j < k_.instrs.size(); ++j) {
            const KInstr& in = k_.instrs[j];
            if (!acc[j] || in.kind != KOp::Reduce) continue;
            Value* x = v[static_cast<std::size_t>(in.a)];
            if (best[j]) {
              Value* xi = in.b >= 0 ? v[static_cast<std::size_t>(in.b)]
                                    : index_t == i64_ ? row : b_.CreateTrunc(row, index_t);
              Value* take = in.b >= 0 ? arg_take(in.op, value_dtype(in), x, xi, cur_best[j], cur[j])
                                      : arg_better(in.op, value_dtype(in), x, cur_best[j]);
              cur_best[j] = b_.CreateSelect(take, x, cur_best[j]);
              cur[j] = b_.CreateSelect(take, xi, cur[j]);
              continue;
            }
            cur[j] = sc_.op(in, in.dtype, cur[j], x, nullptr, false);
          }
        }
        for (std::size_t j = 0; j < k_.instrs.size(); ++j) {
          if (acc[j]) b_.CreateStore(cur[j], slot(j, i));
          if (best[j]) b_.CreateStore(to_slot(cur_best[j], value_dtype(k_.instrs[j])), best_slot(j, i));
        }
      });
    };
    reduce_loops(0, reduce_.size() - 1, base, false, [&](const Pos& pos) {
      Value* ext = ext_[static_cast<std::size_t>(d)];
      // A scan stores every row: several rows per pass would be several
      // output streams, whose ranges over the whole loop nest overlap, so
      // the vectorizer's run-time alias check would always send the loop to
      // its scalar version (4x slower for cumsum(x, 0)). One row per pass.
      const int unroll = scalar_loops_ ? 1 : outer_rows();
      if (unroll == 1) {  // no remainder: one copy of the body
        loop(ext, false, [&](Value* r) { rows(pos, r, 1); });
        return;
      }
      Value* groups = b_.CreateUDiv(ext, b_.getInt64(unroll));
      loop(groups, false, [&](Value* g) { rows(pos, b_.CreateMul(g, b_.getInt64(unroll), "", true, true), unroll); });
      Value* done = b_.CreateMul(groups, b_.getInt64(unroll), "", true, true);
      loop(b_.CreateSub(ext, done), false, [&](Value* r) { rows(pos, b_.CreateAdd(done, r, "", true, true), 1); });
    });
    loop(n, true, [&](Value* i) {
      point(1, step(base, L, i), [&](std::size_t j) {
        Value* v = b_.CreateLoad(acc_type(j), slot(j, i));
        return acc_type(j) == sc_.type(k_.instrs[j].dtype) ? v : b_.CreateSExt(v, sc_.type(k_.instrs[j].dtype));
      });
    });
  }

  void accumulate(const std::vector<Value*>& v, const std::function<Value*(std::size_t)>& where, bool reassoc) {
    for (std::size_t j = 0; j < k_.instrs.size(); ++j) {
      const KInstr& in = k_.instrs[j];
      if (in.kind != KOp::Reduce) continue;
      Value* addr = where(j);
      Value* cur = b_.CreateLoad(sc_.type(in.dtype), addr);
      b_.CreateStore(sc_.op(in, in.dtype, cur, v[static_cast<std::size_t>(in.a)], nullptr, reassoc), addr);
    }
  }

  // What a Reduce or Scan accumulator starts from (sem::scan_identity for scans).
  llvm::Constant* start_value(const KInstr& in) const {
    return sc_.identity(in.op, in.dtype, in.kind == KOp::Scan);
  }

  // Each stream's buffer is its own alias scope, and its accesses alias no
  // other's: outputs are buffers of their own or disjoint slices of one
  // (a concatenation's), never an input's, except where an output takes an
  // input over at exactly its index (alias_: the executor's buffer plan,
  // checked at run time under AJ_VERIFY). Such an output is its input's
  // scope, at the same SSA addresses (a distance-0 dependence). Inputs only
  // read, so two of them on one buffer say nothing false. Saying all this
  // lets LLVM keep a gather's index, loaded once per row, out of the row's
  // loop (it would otherwise reload it after every store: an embedding
  // lookup became a per-element gather), and leaves it no run-time overlap
  // check: those chose the vector or the scalar loop by the buffers'
  // addresses, and the two sum in other orders (an in-place variant's loss
  // differed by 1 ulp from run to run).
  template <class I>
  I* no_alias(I* inst, std::size_t stream) {
    for (int a : alias_) {
      if (a == jit::kAliasUnknown) return inst;
    }
    const std::size_t streams = static_cast<std::size_t>(nin_) + alias_.size();
    auto group = [&](std::size_t s) {
      const std::size_t nin = static_cast<std::size_t>(nin_);
      return s < nin || alias_[s - nin] < 0 ? s : static_cast<std::size_t>(alias_[s - nin]);
    };
    if (scope_of_.empty()) {
      llvm::MDBuilder mdb(c_);
      llvm::MDNode* domain = mdb.createAnonymousAliasScopeDomain("aj.kernel");
      std::vector<llvm::MDNode*> scope(streams, nullptr);
      for (std::size_t s = 0; s < streams; ++s) {
        if (group(s) == s) scope[s] = mdb.createAnonymousAliasScope(domain, "stream " + std::to_string(s));
      }
      scope_of_.assign(streams, nullptr);
      others_of_.assign(streams, nullptr);
      for (std::size_t s = 0; s < streams; ++s) {
        if (!scope[s]) continue;
        std::vector<llvm::Metadata*> others;
        for (std::size_t t = 0; t < streams; ++t) {
          if (scope[t] && t != s) others.push_back(scope[t]);
        }
        scope_of_[s] = llvm::MDNode::get(c_, {scope[s]});
        others_of_[s] = llvm::MDNode::get(c_, others);
      }
    }
    const std::size_t g = group(stream);
    inst->setMetadata(llvm::LLVMContext::MD_alias_scope, scope_of_[g]);
    if (!others_of_[g]->operands().empty()) inst->setMetadata(llvm::LLVMContext::MD_noalias, others_of_[g]);
    return inst;
  }

  // The i64 (f64) value of kernel scalar k.
  Value* scalar_i64(std::int32_t k) { return scalar_field(k, i64_, offsetof(KScalar, i)); }
  Value* scalar_f64(std::int32_t k) { return scalar_field(k, b_.getDoubleTy(), offsetof(KScalar, f)); }
  Value* scalar_field(std::int32_t k, llvm::Type* t, std::size_t offset) {
    Value* base = b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), scalars_, static_cast<std::uint64_t>(k) * sizeof(KScalar));
    return b_.CreateLoad(t, b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), base, offset));
  }

  // floor(x / k) for k > 0.
  Value* floor_div(Value* x, Value* k) {
    Value* q = b_.CreateSDiv(x, k);
    Value* neg = b_.CreateICmpSLT(b_.CreateSRem(x, k), b_.getInt64(0));
    return b_.CreateSub(q, b_.CreateZExt(neg, i64_));
  }

  // The inner (segment) loop of an elementwise kernel with pad masks
  // (InRange) or comparisons of an integer iota with a scalar (`arange(n) ==
  // 0`, `i < k`: iota_compare). Each such mask holds on one run [from, to)
  // of the segment, or off it (`negate`: `!=`, `>`, `>=`), so the runs'
  // ends cut the segment into intervals on which every mask is constant:
  // each interval runs as a loop of its own with the masks its values at the
  // interval's first point, loop-invariant (a masked load becomes a plain
  // load or none once LLVM unswitches it, and a select of an invariant a
  // plain value). The inside of a pad, the two halves of a roll
  // (complementary masks) and the inside of an `arange` mask run at the
  // speed of a plain kernel.
  struct Run {
    std::size_t instr;
    Value *from, *to;
    bool negate = false;  // the mask holds off [from, to)
    // The mask's value on most of a segment, where that is known: true for
    // a pad's (its inside), false for `==` and true for `!=`.
    std::optional<bool> usual;
    bool flat = false;  // its stream does not move along the segment: all of it, or none
    std::vector<std::size_t> also;  // other masks of the same stream and range (the same values)
  };

  void range_split(const Pos& base, Value* n) {
    std::vector<Run> runs = pad_runs(base, n);
    Value* ok = b_.getTrue();
    std::vector<Run> iota = iota_runs(base, n, ok);
    if (iota.empty()) return split_loop(base, n, runs);
    // The iota runs rest on the iota's values being exact i64 (or i32)
    // arithmetic over the segment; where they are not (a huge start or
    // step), the masks are computed at every point.
    auto* fast = llvm::BasicBlock::Create(c_, "iota.split", f_);
    auto* slow = llvm::BasicBlock::Create(c_, "iota.points", f_);
    auto* join = llvm::BasicBlock::Create(c_, "iota.join", f_);
    b_.CreateCondBr(ok, fast, slow);
    b_.SetInsertPoint(fast);
    std::vector<Run> all = runs;
    all.insert(all.end(), iota.begin(), iota.end());
    split_loop(base, n, all);
    b_.CreateBr(join);
    // The rare path (an iota past 9e15, an i32 iota that wraps) is one
    // plain loop, every mask computed at every point, neither vectorized
    // nor unrolled: a second split loop doubled the kernel's LLVM time.
    b_.SetInsertPoint(slow);
    const bool was = scalar_loops_;
    scalar_loops_ = true;
    loop(n, false, [&](Value* j) { point(0, step(base, seg_axis_, j), nullptr); });
    scalar_loops_ = was;
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
  }

  // Each pad mask's run over the segment.
  std::vector<Run> pad_runs(const Pos& base, Value* n) {
    const auto L = static_cast<std::size_t>(seg_axis_);
    std::vector<Run> runs;
    for (std::size_t j = 0; j < k_.instrs.size(); ++j) {
      const KInstr& in = k_.instrs[j];
      if (in.kind != KOp::InRange || in.phase != 0) continue;
      // A pad's mask is often repeated (each piece of an edge pad and
      // every read of the pad test it): one run for all.
      auto same = std::find_if(runs.begin(), runs.end(), [&](const Run& r) {
        const KInstr& o = k_.instrs[r.instr];
        return o.arg == in.arg && o.a == in.a && o.b == in.b;
      });
      if (same != runs.end()) {
        same->also.push_back(j);
        continue;
      }
      const auto s = static_cast<std::size_t>(in.arg);
      Value* lo = scalar_i64(in.a);
      Value* hi = scalar_i64(in.b);
      Value* at = base[s];
      Value* k = stride_[s][L];
      Value *from, *to;
      if (!k) {  // constant over the segment: all inside, or none
        Value* ok = b_.CreateAnd(b_.CreateICmpSLE(lo, at), b_.CreateICmpSLT(at, hi));
        from = b_.getInt64(0);
        to = b_.CreateSelect(ok, n, b_.getInt64(0));
      } else {
        // k > 0: ceil((lo - at) / k) <= i < ceil((hi - at) / k);
        // k < 0: floor((at - hi) / -k) + 1 <= i < floor((at - lo) / -k) + 1.
        Value* pos = b_.CreateICmpSGT(k, b_.getInt64(0));
        Value* ak = b_.CreateSelect(pos, k, b_.CreateNeg(k));
        Value* km1 = b_.CreateSub(ak, b_.getInt64(1));
        Value* up_from = floor_div(b_.CreateAdd(b_.CreateSub(lo, at), km1), ak);
        Value* up_to = floor_div(b_.CreateAdd(b_.CreateSub(hi, at), km1), ak);
        Value* dn_from = b_.CreateAdd(floor_div(b_.CreateSub(at, hi), ak), b_.getInt64(1));
        Value* dn_to = b_.CreateAdd(floor_div(b_.CreateSub(at, lo), ak), b_.getInt64(1));
        from = b_.CreateSelect(pos, up_from, dn_from);
        to = b_.CreateSelect(pos, up_to, dn_to);
      }
      Run run = clamped(Run{.instr = j, .from = from, .to = to, .negate = false, .usual = {}, .flat = false, .also = {}}, n);
      run.usual = true;
      run.flat = !k;
      runs.push_back(run);
    }
    return runs;
  }

  // A run clamped to the segment [0, n), empty where from >= to.
  Run clamped(Run r, Value* n) {
    auto clamp = [&](Value* x) {
      return b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, b_.getInt64(0)), n);
    };
    r.from = clamp(r.from);
    r.to = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, clamp(r.to), r.from);
    return r;
  }

  // A comparison of an integer iota with a scalar: `v op c` where v is an
  // Iota of i64 or i32 read at its index stream's position (no gather
  // offset) and c a Const of the same dtype, either side. The op as if the
  // iota were on the left (Lt <-> Gt, Le <-> Ge when it is on the right).
  struct IotaCompare {
    std::size_t iota, c;
    Op op;
  };
  std::optional<IotaCompare> iota_compare(const KInstr& in) const {
    if (in.kind != KOp::Binary || in.phase != 0 || !is_compare(in.op)) return std::nullopt;
    auto is_iota = [&](std::int32_t x) {
      const KInstr& v = k_.instrs[static_cast<std::size_t>(x)];
      return v.kind == KOp::Index && v.op == Op::Iota && v.b < 0 && v.phase == 0 &&
             (v.dtype == DType::i64 || v.dtype == DType::i32);
    };
    auto is_const = [&](std::int32_t x) { return k_.instrs[static_cast<std::size_t>(x)].kind == KOp::Const; };
    if (is_iota(in.a) && is_const(in.b)) return IotaCompare{static_cast<std::size_t>(in.a), static_cast<std::size_t>(in.b), in.op};
    if (is_const(in.a) && is_iota(in.b)) {
      const Op mirrored = in.op == Op::Lt ? Op::Gt : in.op == Op::Gt ? Op::Lt : in.op == Op::Le ? Op::Ge : in.op == Op::Ge ? Op::Le : in.op;
      return IotaCompare{static_cast<std::size_t>(in.b), static_cast<std::size_t>(in.a), mirrored};
    }
    return std::nullopt;
  }

  // Each iota comparison's run over the segment; `ok` is and-ed with
  // whether they hold: the iota's start and step integral (as
  // sem::generate_value computes it in integers) and its values over the
  // segment, A + B j for j in [0, n), free of overflow and inside the
  // dtype (an i32 iota that would wrap is left to the per-point code).
  std::vector<Run> iota_runs(const Pos& base, Value* n, Value*& ok) {
    const auto L = static_cast<std::size_t>(seg_axis_);
    std::vector<Run> runs;
    for (std::size_t j = 0; j < k_.instrs.size(); ++j) {
      const std::optional<IotaCompare> ic = iota_compare(k_.instrs[j]);
      if (!ic) continue;
      const KInstr& x = k_.instrs[ic->iota];
      const auto s = static_cast<std::size_t>(x.arg);
      const bool i32 = x.dtype == DType::i32;
      auto integral = [&](Value* f) {
        Value* fl = b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, f);
        Value* ab = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, f);
        return b_.CreateAnd(b_.CreateFCmpOEQ(fl, f), b_.CreateFCmpOLT(ab, llvm::ConstantFP::get(b_.getDoubleTy(), 9e15)));
      };
      auto to_int = [&](Value* f, Value* good) {  // poison never reaches a branch: 0 where not integral
        return b_.CreateSelect(good, b_.CreateFPToSI(f, i64_), b_.getInt64(0));
      };
      Value* f0ok = integral(gen_params_[ic->iota][0]);
      Value* f1ok = integral(gen_params_[ic->iota][1]);
      Value* start = to_int(gen_params_[ic->iota][0], f0ok);
      Value* stp = to_int(gen_params_[ic->iota][1], f1ok);
      Value* good = b_.CreateAnd(f0ok, f1ok);
      std::vector<Value*> overflow;
      auto mul = [&](Value* a, Value* b) {
        Value* r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smul_with_overflow, a, b);
        overflow.push_back(b_.CreateExtractValue(r, 1));
        return b_.CreateExtractValue(r, 0);
      };
      auto add = [&](Value* a, Value* b) {
        Value* r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::sadd_with_overflow, a, b);
        overflow.push_back(b_.CreateExtractValue(r, 1));
        return b_.CreateExtractValue(r, 0);
      };
      Value* k = stride_[s][L] ? stride_[s][L] : b_.getInt64(0);
      Value* A = add(start, mul(stp, base[s]));                  // the value at j = 0
      Value* B = mul(stp, k);                                    // per step of j
      Value* E = add(A, mul(B, b_.CreateSub(n, b_.getInt64(1))));  // at j = n - 1
      for (Value* o : overflow) good = b_.CreateAnd(good, b_.CreateNot(o));
      // Inside +-2^61 (i32: the i32 range), so that c clamped below and the
      // differences stay far from overflow.
      const std::int64_t lim = i32 ? std::numeric_limits<std::int32_t>::max() : (std::int64_t{1} << 61);
      const std::int64_t low = i32 ? std::numeric_limits<std::int32_t>::min() : -lim;
      for (Value* v : {A, E}) {
        good = b_.CreateAnd(good, b_.CreateAnd(b_.CreateICmpSGE(v, b_.getInt64(low)), b_.CreateICmpSLE(v, b_.getInt64(lim))));
      }
      ok = b_.CreateAnd(ok, good);
      // c clamped to [min - 1, max + 1] of the segment's values: the same
      // answer at every point, and c - A small.
      Value* c = consts_[ic->c];
      if (i32) c = b_.CreateSExt(c, i64_);
      Value* vmin = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, A, E);
      Value* vmax = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, A, E);
      c = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, c, b_.CreateSub(vmin, b_.getInt64(1)));
      c = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, c, b_.CreateAdd(vmax, b_.getInt64(1)));
      // Gt is !Le, Ge is !Lt, Ne is !Eq.
      Op op = ic->op;
      const bool negate = op == Op::Gt || op == Op::Ge || op == Op::Ne;
      if (op == Op::Gt) op = Op::Le;
      if (op == Op::Ge) op = Op::Lt;
      if (op == Op::Ne) op = Op::Eq;
      Value* zero = b_.getInt64(0);
      Value* one = b_.getInt64(1);
      Value* pos = b_.CreateICmpSGT(B, zero);
      Value* flat = b_.CreateICmpEQ(B, zero);
      // |B| as a divisor: never 0 (a flat segment takes the other arm) and
      // never -1 (no INT64_MIN / -1), even on the arm a select drops.
      Value* ab = b_.CreateSelect(flat, one, b_.CreateSelect(pos, B, b_.CreateNeg(B)));
      Value* D = b_.CreateSub(c, A);  // v(j) - c = B j - D
      Value *from, *to;
      if (op == Op::Eq) {
        // B j == D: j = D / B where B divides D.
        Value* num = b_.CreateSelect(pos, D, b_.CreateNeg(D));
        Value* at = b_.CreateSDiv(num, ab);
        Value* exact = b_.CreateICmpEQ(b_.CreateSRem(num, ab), zero);
        Value* hit = b_.CreateSelect(flat, b_.CreateICmpEQ(D, zero), exact);
        from = b_.CreateSelect(flat, zero, at);
        to = b_.CreateSelect(hit, b_.CreateSelect(flat, n, b_.CreateAdd(at, one)), from);
      } else {
        // v < c (Le: v < c + 1): B j < D. B > 0: j < ceil(D / B);
        // B < 0: j > -D / |B|, j >= floor(-D / |B|) + 1.
        if (op == Op::Le) D = b_.CreateAdd(D, one);
        Value* q = b_.CreateSDiv(D, ab);
        Value* r = b_.CreateSRem(D, ab);
        Value* ceil = b_.CreateAdd(q, b_.CreateZExt(b_.CreateICmpSGT(r, zero), i64_));
        Value* nq = b_.CreateSDiv(b_.CreateNeg(D), ab);
        Value* nr = b_.CreateSRem(b_.CreateNeg(D), ab);
        Value* floor_plus = b_.CreateAdd(b_.CreateSub(nq, b_.CreateZExt(b_.CreateICmpSLT(nr, zero), i64_)), one);
        Value* all = b_.CreateICmpSGT(D, zero);  // flat: 0 < D
        from = b_.CreateSelect(flat, zero, b_.CreateSelect(pos, zero, floor_plus));
        to = b_.CreateSelect(flat, b_.CreateSelect(all, n, zero), b_.CreateSelect(pos, ceil, n));
      }
      Run run = clamped(Run{.instr = j, .from = from, .to = to, .negate = false, .usual = {}, .flat = false, .also = {}}, n);
      run.negate = negate;
      if (op == Op::Eq) run.usual = negate;
      run.flat = !stride_[s][L];
      runs.push_back(run);
    }
    return runs;
  }

  // for (p = 0; p < n; p = next): next is the first run end after p, and
  // each mask is its value at p. What does not change over an interval
  // (interval_invariant) is computed once before its loop: LLVM would keep a
  // masked load of a broadcast stream in the loop, and its vectorizer
  // scalarizes that into a branch per lane (an edge pad of both axes ran
  // 9x slower than `x * 2`). The interval where every mask has its usual
  // value (inside every pad, off every `==`) runs a loop of its own with
  // those values as constants: plain loads, no selects between a pad's
  // pieces (LLVM does not unswitch a loop on a dozen masks).
  void split_loop(const Pos& base, Value* n, const std::vector<Run>& runs) {
    std::vector<bool> invariant = interval_invariant(runs);
    // A flat run is the segment or nothing: its value is the segment's and
    // it cuts nothing (the 2-D grid's row masks).
    auto value_at = [&](const Run& r, Value* p) {
      Value* in = r.flat ? b_.CreateICmpSLT(r.from, r.to) : b_.CreateAnd(b_.CreateICmpSLE(r.from, p), b_.CreateICmpSLT(p, r.to));
      return r.negate ? b_.CreateNot(in) : in;
    };
    std::vector<Value*> flat_at(runs.size(), nullptr);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].flat) flat_at[i] = value_at(runs[i], nullptr);
    }
    const std::vector<Pattern> patterns = mask_patterns(runs);
    // One walk over the intervals. With a pattern: only the intervals whose
    // masks match it and no earlier pattern, with the masks it fixes as
    // constants. Without one: the intervals no pattern matched (every
    // interval when there are none), every mask its value at the
    // interval's start.
    auto walk = [&](const Pattern* pattern, std::size_t earlier) {
      loop_by(n, false, [&](Value* p) {
        Value* next = n;
        std::vector<Value*> at(k_.instrs.size(), nullptr);
        std::vector<Value*> value(runs.size(), nullptr);
        for (std::size_t i = 0; i < runs.size(); ++i) {
          const Run& r = runs[i];
          if (!r.flat) {
            for (Value* end : {r.from, r.to}) {
              next = b_.CreateSelect(b_.CreateICmpSGT(end, p), b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, next, end), next);
            }
          }
          Value* v = r.flat ? flat_at[i] : value_at(r, p);
          value[i] = v;
          at[r.instr] = v;
          for (std::size_t o : r.also) at[o] = v;
        }
        auto matches = [&](const Pattern& q) {
          Value* m = b_.getTrue();
          for (std::size_t i = 0; i < runs.size(); ++i) {
            if (q[i]) m = b_.CreateAnd(m, *q[i] ? value[i] : b_.CreateNot(value[i]));
          }
          return m;
        };
        Value* taken = b_.getFalse();  // by an earlier pattern's walk
        for (std::size_t e = 0; e < earlier; ++e) taken = b_.CreateOr(taken, matches(patterns[e]));
        Value* go = pattern ? b_.CreateAnd(matches(*pattern), b_.CreateNot(taken)) : b_.CreateNot(taken);
        auto* run = llvm::BasicBlock::Create(c_, "interval", f_);
        auto* skip = llvm::BasicBlock::Create(c_, "interval.next", f_);
        if (pattern || earlier > 0) b_.CreateCondBr(go, run, skip);
        else b_.CreateBr(run);
        b_.SetInsertPoint(run);
        mask_at_ = at;
        if (pattern) {
          for (std::size_t i = 0; i < runs.size(); ++i) {
            if (!(*pattern)[i]) continue;
            mask_at_[runs[i].instr] = b_.getInt1(*(*pattern)[i]);
            for (std::size_t o : runs[i].also) mask_at_[o] = mask_at_[runs[i].instr];
          }
        }
        // The interval [p, next) is not empty: its first point's values
        // are every point's.
        hoisted_ = point(0, step(base, seg_axis_, p), nullptr, {}, &invariant);
        loop(b_.CreateSub(next, p), true, [&](Value* j) { point(0, step(base, seg_axis_, b_.CreateAdd(j, p, "", true, true)), nullptr); });
        hoisted_.clear();
        mask_at_.clear();
        b_.CreateBr(skip);
        b_.SetInsertPoint(skip);
        return next;
      });
    };
    // One walk per pattern, then one for the rest: separate loops, not one
    // with all of them in it (LLVM's loop unswitching prices a loop by its
    // number of siblings: with the usual loop beside it the masked loop of
    // a roll was no longer unswitched, the roll heat step 35 -> 48 us).
    for (std::size_t q = 0; q < patterns.size(); ++q) walk(&patterns[q], q);
    walk(nullptr, patterns.size());
  }

  // The mask values an interval's own loop fixes as constants (nullopt: the
  // mask's value at the interval's start): each an interval's loop with
  // plain loads and no selects between a pad's pieces. The first: every
  // mask its usual value (inside every pad, off every `==`). But a roll is
  // a pad whose outside is another pad (the two halves: `where(A, first,
  // where(B, second, 0))`), and A and B never hold together: no interval
  // is usual, and every interval ran with both masks as values, left to
  // LLVM's unswitching, which gives up as masks add up (a heat step with
  // two rolls and an `arange` mask took 2x the loop). So for up to two such
  // pairs, each choice of a half: A (B left as it is: the inner pad's
  // value is not read where A holds, and is dead code there) or not A and B.
  using Pattern = std::vector<std::optional<bool>>;
  std::vector<Pattern> mask_patterns(const std::vector<Run>& runs) const {
    Pattern usual(runs.size());
    bool any = false;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      usual[i] = runs[i].usual;
      any |= runs[i].usual.has_value();
    }
    if (!any) return {};
    // Each walk costs its intervals' bookkeeping once per segment: a grid's
    // short rows (a flat run: masks of another axis) pay it a thousand times
    // over (the 1024^2 edge-pad heat step went from 0.95x to 1.5-2x the loop
    // with the pairs' walks), so those keep the two walks.
    for (const Run& r : runs) {
      if (r.flat) return {usual};
    }
    // run_of[instr]: the pad run (usually inside) whose mask the instruction is.
    std::vector<int> run_of(k_.instrs.size(), -1);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].usual != std::optional<bool>(true) || runs[i].negate || k_.instrs[runs[i].instr].kind != KOp::InRange) continue;
      run_of[runs[i].instr] = static_cast<int>(i);
      for (std::size_t o : runs[i].also) run_of[o] = static_cast<int>(i);
    }
    std::vector<std::pair<int, int>> pairs;  // (outer A, inner B)
    auto used = [&](int r) {
      for (const auto& [a, b] : pairs) {
        if (a == r || b == r) return true;
      }
      return false;
    };
    for (const KInstr& w : k_.instrs) {
      if (w.kind != KOp::Where || w.phase != 0 || w.a < 0 || w.c < 0 || pairs.size() == 2) continue;
      const KInstr& inner = k_.instrs[static_cast<std::size_t>(w.c)];
      if (inner.kind != KOp::Where || inner.a < 0) continue;
      const int A = run_of[static_cast<std::size_t>(w.a)], B = run_of[static_cast<std::size_t>(inner.a)];
      if (A < 0 || B < 0 || A == B || used(A) || used(B)) continue;
      pairs.push_back({A, B});
    }
    // The usual pattern first: an edge pad is a pad over pads too, but its
    // pieces overlap (the inside and the first edge's range both hold on
    // the interior), and the interior keeps the loop it had.
    std::vector<Pattern> out{usual};
    for (unsigned choice = 0; choice < (1u << pairs.size()); ++choice) {
      Pattern q = usual;
      for (std::size_t j = 0; j < pairs.size(); ++j) {
        const auto [A, B] = pairs[j];
        const bool first = (choice >> j) & 1u;
        q[static_cast<std::size_t>(A)] = first;
        q[static_cast<std::size_t>(B)] = first ? std::nullopt : std::optional<bool>(true);
      }
      out.push_back(std::move(q));
    }
    return out;
  }

  // The phase-0 instructions whose value is the same at every point of an
  // interval: its masks (the runs), constants, and loads, generators and
  // positions of streams that do not move along the segment (no gather
  // offset), and ops of those. Every op is safe to compute where its loop's
  // point would (base/semantics.hpp: no undefined behaviour), and a masked
  // load keeps its branch.
  std::vector<bool> interval_invariant(const std::vector<Run>& runs) const {
    const auto L = static_cast<std::size_t>(seg_axis_);
    std::vector<bool> inv(k_.instrs.size(), false);
    for (const Run& r : runs) {
      inv[r.instr] = true;
      for (std::size_t o : r.also) inv[o] = true;
    }
    auto is = [&](std::int32_t o) { return o < 0 || inv[static_cast<std::size_t>(o)]; };
    for (std::size_t j = 0; j < k_.instrs.size(); ++j) {
      const KInstr& in = k_.instrs[j];
      if (in.phase != 0 || inv[j]) continue;
      const bool streamed = in.kind == KOp::Load || in.kind == KOp::Index || in.kind == KOp::Position;
      const bool still = streamed && !stride_[static_cast<std::size_t>(in.arg)][L];  // arg: the stream
      switch (in.kind) {
        case KOp::Const: inv[j] = true; break;
        case KOp::Load: inv[j] = still && in.b < 0 && is(in.c); break;
        case KOp::Index: inv[j] = still && is(in.b); break;
        case KOp::Position: inv[j] = still; break;
        case KOp::Unary: case KOp::Binary: case KOp::Where: inv[j] = is(in.a) && is(in.b) && is(in.c); break;
        default: break;
      }
    }
    return inv;
  }

  bool has_ranges() const {
    for (const KInstr& in : k_.instrs) {
      if (in.kind == KOp::InRange && in.phase == 0) return true;
      if (iota_compare(in)) return true;
    }
    return false;
  }

  // if (mask) x = *at else x = 0, as a branch (the block the builder is in
  // continues after it).
  Value* masked_load(llvm::Type* mt, std::size_t stream, Value* at, Value* mask) {
    Value* base = ptr_of_[stream];
    auto* pre = b_.GetInsertBlock();
    auto* then = llvm::BasicBlock::Create(c_, "masked.load", f_);
    auto* join = llvm::BasicBlock::Create(c_, "masked.join", f_);
    b_.CreateCondBr(mask, then, join);
    b_.SetInsertPoint(then);
    Value* x = no_alias(b_.CreateLoad(mt, b_.CreateGEP(mt, base, at)), stream);
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
    llvm::PHINode* phi = b_.CreatePHI(mt, 2);
    phi->addIncoming(x, then);
    phi->addIncoming(llvm::Constant::getNullValue(mt), pre);
    return phi;
  }

  // Evaluate the instructions of `phase` at one point, then store that
  // phase's outputs (all loads of a point come before its stores). `scan`
  // advances Scan instruction j's running value by x and returns it.
  // `only`: evaluate just those instructions and store nothing (the
  // values split_loop hoists before an interval's loop).
  std::vector<Value*> point(int phase, const Pos& pos, const std::function<Value*(std::size_t)>& reduced,
                            const std::function<Value*(std::size_t, Value*)>& scan = {},
                            const std::vector<bool>* only = nullptr) {
    std::vector<Value*> v(k_.instrs.size(), nullptr);
    auto val = [&](int o) { return o < 0 ? nullptr : v[static_cast<std::size_t>(o)]; };
    for (std::size_t j = 0; j < k_.instrs.size(); ++j) {
      const KInstr& in = k_.instrs[j];
      if (in.phase != phase) continue;
      if (only && !(*only)[j]) continue;
      if (!hoisted_.empty() && hoisted_[j]) {
        v[j] = hoisted_[j];
        continue;
      }
      switch (in.kind) {
        case KOp::Load: {
          const auto s = static_cast<std::size_t>(in.arg);
          llvm::Type* mt = sc_.mem_type(in.dtype);
          Value* x;
          if (in.b < 0 && in.c < 0) {
            x = no_alias(b_.CreateLoad(mt, b_.CreateInBoundsGEP(mt, ptr_of_[s], pos[s])), s);
          } else {
            // A gather adds its index; a pad's mask guards the load with a
            // branch, which the loop vectorizer turns into a masked vector
            // load (AVX2/AVX-512). No `inbounds`: a masked-off address may
            // lie outside the buffer.
            Value* at = in.b < 0 ? pos[s] : b_.CreateAdd(pos[s], val(in.b));
            x = in.c < 0 ? no_alias(b_.CreateLoad(mt, b_.CreateGEP(mt, ptr_of_[s], at)), s)
                         : masked_load(mt, s, at, val(in.c));
          }
          v[j] = in.dtype == DType::bool_ ? b_.CreateICmpNE(x, b_.getInt8(0)) : x;
          break;
        }
        case KOp::Const: v[j] = consts_[j]; break;
        case KOp::Index: {
          Value* s = b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), scalars_,
                                                   static_cast<std::uint64_t>(in.a) * sizeof(KScalar));
          Value* at = pos[static_cast<std::size_t>(in.arg)];
          if (in.b >= 0) at = b_.CreateAdd(at, val(in.b));
          v[j] = sc_.generate(in.op, in.dtype, s, gen_params_[j], at);
          break;
        }
        case KOp::Position: v[j] = pos[static_cast<std::size_t>(in.arg)]; break;
        case KOp::InRange: {
          if (!mask_at_.empty() && mask_at_[j]) {  // an interval of range_split: invariant
            v[j] = mask_at_[j];
            break;
          }
          Value* at = pos[static_cast<std::size_t>(in.arg)];
          v[j] = b_.CreateAnd(b_.CreateICmpSLE(scalar_i64(in.a), at), b_.CreateICmpSLT(at, scalar_i64(in.b)));
          break;
        }
        case KOp::Unary: case KOp::Binary: case KOp::Where: {
          if (in.kind == KOp::Binary && !mask_at_.empty() && mask_at_[j]) {  // an iota compare, invariant here
            v[j] = mask_at_[j];
            break;
          }
          const int first = in.kind == KOp::Where ? in.b : in.a;
          const DType t = k_.instrs[static_cast<std::size_t>(first)].dtype;
          v[j] = sc_.op(in, t, val(in.a), val(in.b), val(in.c), false);
          break;
        }
        case KOp::Reduce:
          if (!reduced) internal_error("jit: Reduce outside phase 1");
          v[j] = reduced(j);
          break;
        case KOp::Scan:
          if (!scan) internal_error("jit: Scan outside a reduction loop");
          v[j] = scan(j, v[static_cast<std::size_t>(in.a)]);
          break;
      }
    }
    if (only) return v;
    for (std::size_t o = 0; o < k_.outputs.size(); ++o) {
      const KOutput& out = k_.outputs[o];
      if (out.phase != phase) continue;
      const auto s = static_cast<std::size_t>(nin_) + o;
      Value* x = v[static_cast<std::size_t>(out.value)];
      if (!x) internal_error("jit: output of a value not computed in its phase");
      if (out.stream.dtype == DType::bool_) x = b_.CreateZExt(x, b_.getInt8Ty());
      llvm::Type* mt = sc_.mem_type(out.stream.dtype);
      no_alias(b_.CreateStore(x, b_.CreateInBoundsGEP(mt, ptr_of_[s], pos[s])), s);
    }
    return v;
  }

  const Kernel& k_;
  const std::vector<int>& alias_;
  llvm::Module& m_;
  llvm::LLVMContext& c_;
  llvm::IRBuilder<> b_;
  ScalarCodegen sc_;
  int rank_, nin_, nstreams_;
  std::vector<int> outer_, reduce_;
  Mode mode_ = Mode::elementwise;
  bool arg_ = false;  // the kernel has an arg reduction
  bool scalar_loops_ = false;  // loops made now are neither vectorized nor unrolled (by_index_width)
  int seg_axis_ = -1;
  bool has_scan_ = false;
  std::vector<Value*> mask_at_;  // range_split's interval: each InRange's (iota compare's) value there (loop-invariant)
  std::vector<Value*> hoisted_;  // split_loop's interval: values computed once before its loop
  std::vector<llvm::MDNode*> scope_of_, others_of_;  // per stream that is its own scope (no_alias)
  llvm::Function* f_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  llvm::Type *i64_ = nullptr, *ptr_ = nullptr;
  Value* scalars_ = nullptr;
  std::vector<Value*> ext_, ptr_of_, off_, consts_;
  std::vector<std::array<Value*, 4>> gen_params_;  // per KOp::Index instruction
  std::vector<std::vector<Value*>> stride_;
};

}  // namespace

namespace {
std::atomic<std::int64_t> g_index_i32_limit{std::numeric_limits<std::int32_t>::max()};
}  // namespace

std::int64_t index_i32_limit() { return g_index_i32_limit.load(std::memory_order_relaxed); }
void set_index_i32_limit(std::int64_t n) { g_index_i32_limit.store(n, std::memory_order_relaxed); }

bool reassociates(const Kernel& k) {
  // KernelCodegen's inner_reduce mode, whose accumulate() passes reassoc.
  if (!k.is_reduction() || k.reduce_axes.empty() ||
      k.reduce_axes.back() != static_cast<std::int64_t>(k.shape.size()) - 1) {
    return false;
  }
  for (const KInstr& in : k.instrs) {
    if ((in.kind == KOp::Reduce || in.kind == KOp::Scan) && is_float(in.dtype) && !is_half(in.dtype)) return true;
  }
  return false;
}

std::unique_ptr<llvm::Module> generate_module(const Kernel& k, const std::vector<int>& alias,
                                              const std::string& fn_name, llvm::LLVMContext& ctx) {
  auto m = std::make_unique<llvm::Module>("aj_kernel", ctx);
  KernelCodegen(k, alias, *m).emit(fn_name);
  ScalarCodegen::finish_module(*m);  // base/semantics.hpp's functions the kernel calls
  return m;
}

}  // namespace aj::jit
