// The backend-neutral half of jit/host_kernel.hpp: aliasing. The LLVM half (host_kernel, host_kernel_ir) is in
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
    // Another input stream on the same buffer (the plan never donates a
    // buffer it reads elsewhere, so this is a guard): nothing is claimed.
    for (std::size_t i = 0; alias[j] >= 0 && i < k.inputs.size(); ++i) {
      if (static_cast<int>(i) != alias[j] && !k.inputs[i].index_only && inputs[i] == outputs[j]) alias[j] = kAliasUnknown;
    }
  }
}

std::vector<int> exact_aliases(const Kernel& k, const std::vector<const void*>& inputs,
                               const std::vector<void*>& outputs) {
  std::vector<int> alias;
  exact_aliases_into(k, inputs, outputs, alias);
  return alias;
}


}  // namespace aj::jit
