// The backend-neutral half of jit/host_kernel.hpp: aliasing and the
// structure key. The LLVM half (host_kernel, host_kernel_ir) is in
// jit/llvm/host_jit.cpp.
#include "jit/host_kernel.hpp"

#include <algorithm>
#include <cstring>

namespace aj::jit {

void exact_aliases_into(const Kernel& k, const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                        std::vector<int>& alias) {
  alias.assign(k.outputs.size(), -1);
  for (std::size_t j = 0; j < k.outputs.size(); ++j) {
    const KStream& o = k.outputs[j].stream;
    for (std::size_t i = 0; i < k.inputs.size(); ++i) {
      const KStream& s = k.inputs[i];
      if (!s.index_only && !s.gathered && inputs[i] == outputs[j] && s.dtype == o.dtype && s.offset == o.offset &&
          s.strides == o.strides) {
        alias[j] = static_cast<int>(i);
        break;
      }
    }
  }
}

std::vector<int> exact_aliases(const Kernel& k, const std::vector<const void*>& inputs,
                               const std::vector<void*>& outputs) {
  std::vector<int> alias;
  exact_aliases_into(k, inputs, outputs, alias);
  return alias;
}

std::string jit_structure_key(const Kernel& k, const std::vector<int>& alias) {
  // Raw bytes, not text: this runs on every launch (a memory cache lookup).
  std::string s;
  s.reserve(16 + 20 * k.instrs.size() + 8 * (k.inputs.size() + k.outputs.size()) * (k.shape.size() + 2));
  auto put = [&](std::int64_t v) {
    char b[8];
    std::memcpy(b, &v, 8);
    s.append(b, 8);
  };
  auto small = [&](int v) { s.push_back(static_cast<char>(v)); };
  auto stream = [&](const KStream& st) {
    small(static_cast<int>(st.dtype));
    small(st.index_only);
    small(st.gathered);
    for (auto v : st.strides) small(stride_kind(v));
  };
  small(static_cast<int>(k.shape.size()));
  small(static_cast<int>(k.reduce_axes.size()));
  for (auto a : k.reduce_axes) small(static_cast<int>(a));
  put(static_cast<std::int64_t>(k.inputs.size()));
  for (const KStream& st : k.inputs) stream(st);
  put(static_cast<std::int64_t>(k.instrs.size()));
  for (const KInstr& in : k.instrs) {
    small(static_cast<int>(in.kind));
    small(static_cast<int>(in.op));
    small(static_cast<int>(in.dtype));
    small(in.phase);
    std::int32_t f[4] = {in.a, in.b, in.c, in.arg};
    s.append(reinterpret_cast<const char*>(f), sizeof f);
  }
  put(static_cast<std::int64_t>(k.outputs.size()));
  for (const KOutput& o : k.outputs) {
    put(o.value);
    small(o.phase);
    stream(o.stream);
  }
  put(static_cast<std::int64_t>(k.scalars.size()));
  for (const KScalar& sc : k.scalars) small(static_cast<int>(sc.dtype));
  for (int a : alias) put(a);
  return s;
}

}  // namespace aj::jit
