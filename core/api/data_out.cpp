// Getting evaluated values out without extra copies: a read-only window on the
// buffer (Array::data), a copy into caller memory at memcpy speed
// (Array::copy_to), and evaluation with the kernel writing into caller memory
// (Array::eval_into). The write rule is in docs/semantics.md.
#include <cstring>
#include <string>

#include "backends/cpu/host_memory.hpp"
#include "core/api/eval_into.hpp"
#include "core/api/evaluate.hpp"
#include "core/api/trace.hpp"
#include "exec/execute.hpp"

namespace aj {

namespace {

// Strides with size-1 axes ignored (their stride never moves).
bool strides_are(const Shape& s, const std::vector<std::int64_t>& strides,
                 const std::vector<std::int64_t>& want) {
  if (s.numel() == 0) return true;
  for (int d = 0; d < s.ndim(); ++d) {
    auto du = static_cast<std::size_t>(d);
    if (s[d] != 1 && strides[du] != want[du]) return false;
  }
  return true;
}

std::vector<std::int64_t> column_major_strides(const Shape& s) {
  std::vector<std::int64_t> st(static_cast<std::size_t>(s.ndim()));
  std::int64_t step = 1;
  for (int d = 0; d < s.ndim(); ++d) {
    st[static_cast<std::size_t>(d)] = step;
    step *= s[d];
  }
  return st;
}

// One copy loop: axes of extent 1 dropped, neighbours that are one run in both
// layouts merged, so two row-major layouts become one memcpy and a strided
// source gets a tight inner loop.
struct CopyAxis {
  std::int64_t n, src, dst;  // extent; strides in bytes
};

std::vector<CopyAxis> copy_axes(const Shape& s, const std::vector<std::int64_t>& src,
                                const std::vector<std::int64_t>& dst, std::int64_t item) {
  std::vector<CopyAxis> axes;
  for (int d = 0; d < s.ndim(); ++d) {
    auto du = static_cast<std::size_t>(d);
    if (s[d] == 1) continue;
    CopyAxis a{s[d], src[du] * item, dst[du] * item};
    if (!axes.empty() && axes.back().src == a.src * a.n && axes.back().dst == a.dst * a.n) {
      axes.back() = {axes.back().n * a.n, a.src, a.dst};
    } else {
      axes.push_back(a);
    }
  }
  return axes;
}

template <std::size_t Item>
void copy_run(const char* src, char* dst, const CopyAxis& a) {
  for (std::int64_t i = 0; i < a.n; ++i) std::memcpy(dst + i * a.dst, src + i * a.src, Item);
}

void copy_strided(const char* src, char* dst, const std::vector<CopyAxis>& axes, std::int64_t item) {
  if (axes.empty()) {
    std::memcpy(dst, src, static_cast<std::size_t>(item));
    return;
  }
  const CopyAxis& inner = axes.back();
  const bool contiguous_run = inner.src == item && inner.dst == item;
  const std::size_t outer = axes.size() - 1;
  std::vector<std::int64_t> idx(outer, 0);
  for (;;) {
    if (contiguous_run) {
      std::memcpy(dst, src, static_cast<std::size_t>(inner.n * item));
    } else {
      switch (item) {
        case 1: copy_run<1>(src, dst, inner); break;
        case 4: copy_run<4>(src, dst, inner); break;
        default: copy_run<8>(src, dst, inner); break;
      }
    }
    std::size_t d = outer;
    for (; d > 0; --d) {
      const CopyAxis& a = axes[d - 1];
      src += a.src, dst += a.dst;
      if (++idx[d - 1] < a.n) break;
      src -= a.src * a.n, dst -= a.dst * a.n;
      idx[d - 1] = 0;
    }
    if (d == 0) return;
  }
}

// The evaluated view behind `a`, taken under its graph's lock (the values are
// then read without it: an evaluated node never changes, and the copy keeps
// its storage), from the host (a GPU array through a synchronizing copy).
Node host_view(const Array& a) {
  Node v;
  {
    GraphScope in(*a.graph_of());
    const Node& n = graph()[a.node_id()];
    v.dtype = n.dtype;
    v.shape = n.shape;
    v.strides = n.strides;
    v.offset = n.offset;
    v.storage = n.storage;
  }
  if (!v.storage->device.host_addressable()) {
    v.storage = detail::backend_for(v.storage->device).to_host(*v.storage);
  }
  return v;
}

// Whether [lo, hi) overlaps the storage of any evaluated array that
// evaluating `id` reads.
bool reads_memory(NodeId id, const char* lo, const char* hi) {
  std::vector<NodeId> stack{id};
  std::vector<bool> seen(graph().capacity(), false);
  while (!stack.empty()) {
    NodeId k = stack.back();
    stack.pop_back();
    if (seen[k]) continue;
    seen[k] = true;
    const Node& n = graph()[k];
    if (n.evaluated()) {
      const char* b = static_cast<const char*>(n.storage->data);
      if (b < hi && lo < b + n.storage->bytes) return true;
      continue;
    }
    for (NodeId in : n.inputs) stack.push_back(in);
  }
  return false;
}

// The pending eval_into destination of this thread (the evaluation runs on
// the thread that asked for it).
struct Destination {
  Graph* graph = nullptr;
  NodeId id = kNoNode;
  void* ptr = nullptr;
  std::size_t bytes = 0;
};
thread_local Destination t_destination;

}  // namespace

bool ArrayData::row_major() const { return strides_are(shape, strides, contiguous_strides(shape)); }
bool ArrayData::column_major() const { return strides_are(shape, strides, column_major_strides(shape)); }

ArrayData Array::data(Loc loc) const {
  trace::own_node(*this, "data", loc);
  eval(loc);
  GraphScope in(*g_);
  const Node& n = graph()[id_];
  ArrayData d;
  d.ptr = static_cast<const char*>(n.storage->data) + n.offset * static_cast<std::int64_t>(itemsize(n.dtype));
  d.dtype = n.dtype;
  d.shape = n.shape;
  d.strides = n.strides;
  d.device = n.storage->device;
  d.owner = *this;
  return d;
}

void Array::copy_to(void* dst, std::vector<std::int64_t> strides, Loc loc) const {
  trace::own_node(*this, "copy_to", loc);
  if (strides.empty()) strides = contiguous_strides(shape());
  if (static_cast<int>(strides.size()) != ndim()) {
    user_error("copy_to", std::to_string(strides.size()) + " strides given for " + trace::describe(*this), loc);
  }
  if (!dst && size() > 0) user_error("copy_to", "null destination for " + trace::describe(*this), loc);
  eval(loc);
  if (size() == 0) return;
  const Node n = host_view(*this);
  const auto item = static_cast<std::int64_t>(itemsize(n.dtype));
  const char* src = static_cast<const char*>(n.storage->data) + n.offset * item;
  copy_strided(src, static_cast<char*>(dst), copy_axes(n.shape, n.strides, strides, item), item);
}

const Array& Array::eval_into(void* dst, Loc loc) const {
  trace::own_node(*this, "eval_into", loc);
  GraphScope in(*g_);  // the walk below and the result's node
  const std::size_t bytes = static_cast<std::size_t>(size()) * itemsize(dtype());
  if (!dst && bytes > 0) user_error("eval_into", "null destination for " + trace::describe(*this), loc);
  const char* lo = static_cast<const char*>(dst);
  auto check_overlap = [&] {
    if (!reads_memory(id_, lo, lo + bytes)) return;
    user_error("eval_into", "the destination overlaps memory that computing " + trace::describe(*this) +
                                " reads (kernels would read what they already overwrote)", loc);
  };
  if (!is_evaluated()) {
    check_overlap();
    t_destination = {g_, id_, dst, bytes};
    exec::set_destination_hook(&detail::take_destination);  // the same hook always: no race
    struct Clear {  // also when evaluation throws
      ~Clear() { t_destination = {}; }
    } clear;
    aj::eval({*this}, loc);
  }
  Node& n = graph()[id_];
  if (n.storage->data == dst && n.storage->device.is_host() && n.offset == 0 &&
      is_contiguous(n.shape, n.strides)) {
    return *this;  // the kernel wrote dst (or an earlier eval_into did)
  }
  // Not written there by a kernel: copy, then read from dst like the direct case.
  check_overlap();
  copy_to(dst, {}, loc);
  if (!n.storage->device.is_host()) return *this;  // a GPU array stays on its device
  graph().set_result(id_, cpu::host_borrow(dst, bytes), contiguous_strides(n.shape), 0);
  return *this;
}

namespace detail {
std::shared_ptr<Storage> take_destination(NodeId id, std::size_t bytes) {
  Destination& d = t_destination;
  if (d.graph != &graph() || d.id != id || d.bytes != bytes) return nullptr;
  void* p = d.ptr;
  d = {};
  return cpu::host_borrow(p, bytes);
}
}  // namespace detail

}  // namespace aj
