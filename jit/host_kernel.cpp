// The backend-neutral half of jit/host_kernel.hpp: aliasing and the
// structure key. The LLVM half (host_kernel, host_kernel_ir) is in
// jit/llvm/host_jit.cpp.
#include "jit/host_kernel.hpp"

#include <algorithm>

namespace aj::jit {

std::vector<int> exact_aliases(const Kernel& k, const std::vector<const void*>& inputs,
                               const std::vector<void*>& outputs) {
  std::vector<int> alias(k.outputs.size(), -1);
  for (std::size_t j = 0; j < k.outputs.size(); ++j) {
    const KStream& o = k.outputs[j].stream;
    for (std::size_t i = 0; i < k.inputs.size(); ++i) {
      const KStream& s = k.inputs[i];
      if (!s.index_only && inputs[i] == outputs[j] && s.dtype == o.dtype && s.offset == o.offset &&
          s.strides == o.strides) {
        alias[j] = static_cast<int>(i);
        break;
      }
    }
  }
  return alias;
}

std::string jit_structure_key(const Kernel& k, const std::vector<int>& alias) {
  std::string s;
  s.reserve(64 + 16 * (k.instrs.size() + k.inputs.size() + k.outputs.size()));
  auto num = [&](std::int64_t v) {
    s += std::to_string(v);
    s += ',';
  };
  auto stream = [&](const KStream& st) {
    num(static_cast<int>(st.dtype));
    num(st.index_only);
    for (auto v : st.strides) s += static_cast<char>('0' + (v == 0 ? 0 : v == 1 ? 1 : 2));
    s += ';';
  };
  s += 'r';
  num(static_cast<std::int64_t>(k.shape.size()));
  for (auto a : k.reduce_axes) num(a);
  s += "|i";
  for (const KStream& st : k.inputs) stream(st);
  s += "|c";
  for (const KInstr& in : k.instrs) {
    num(static_cast<int>(in.kind));
    num(static_cast<int>(in.op));
    num(static_cast<int>(in.dtype));
    num(in.phase);
    num(in.a);
    num(in.b);
    num(in.c);
    num(in.arg);
  }
  s += "|o";
  for (const KOutput& o : k.outputs) {
    num(o.value);
    num(o.phase);
    stream(o.stream);
  }
  s += "|s";
  for (const KScalar& sc : k.scalars) num(static_cast<int>(sc.dtype));
  s += "|a";
  for (int a : alias) num(a);
  return s;
}

std::int64_t outer_points(const Kernel& k) {
  std::int64_t n = 1;
  for (std::size_t d = 0; d < k.shape.size(); ++d) {
    if (std::find(k.reduce_axes.begin(), k.reduce_axes.end(), static_cast<std::int64_t>(d)) == k.reduce_axes.end()) {
      n *= k.shape[d];
    }
  }
  return n;
}

}  // namespace aj::jit
