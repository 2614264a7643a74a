#include "backends/cuda/cuda_backend.hpp"

#include <mutex>
#include <vector>

#include "backends/cuda/cuda_runtime.hpp"
#include "jit/cuda/cuda_library.hpp"

namespace aj::cuda {

namespace {

std::uint64_t address(const Storage* s) { return s ? reinterpret_cast<std::uint64_t>(s->data) : 0; }

class CudaBackend final : public exec::Backend {
 public:
  explicit CudaBackend(int index) : index_(index) {}

  Device device() const override { return Device::cuda(index_); }

  std::shared_ptr<Storage> allocate(std::size_t bytes) override { return device_alloc(index_, bytes); }

  std::shared_ptr<Storage> from_host(const Storage& host) override { return upload(host, index_); }
  std::shared_ptr<Storage> to_host(const Storage& mine) override { return download(mine); }

  void run_kernel(const Kernel& k, const std::vector<const Storage*>& inputs,
                  const std::vector<const Storage*>& outputs) override {
    launch(index_, k, inputs, outputs);
  }

  void run_library(const LibraryCall& call, const std::vector<const Storage*>& inputs,
                   const Storage& out) override {
    std::vector<std::uint64_t> addrs;
    std::vector<const Storage*> touched = inputs;
    for (const Storage* s : inputs) addrs.push_back(address(s));
    touched.push_back(&out);
    const bool blas = call.op == Op::MatMul && blas_api() != nullptr;
    for (const LibraryLaunch& l : plan_library(call, addrs, address(&out), cuda::device(index_).sms, blas)) {
      launch_library(index_, l, touched);
    }
  }

  void synchronize() override { AJ_CU(cuStreamSynchronize, stream_of(index_)); }

 private:
  int index_;
};

}  // namespace

exec::Backend& cuda_backend(int index) {
  cuda::device(index);  // throws when CUDA or this device is unavailable
  static std::mutex mu;
  static auto* backends = new std::vector<CudaBackend*>();  // never destroyed, like the runtime
  std::lock_guard lock(mu);
  const auto i = static_cast<std::size_t>(index);
  if (backends->size() <= i) backends->resize(i + 1, nullptr);
  if (!(*backends)[i]) (*backends)[i] = new CudaBackend(index);
  return *(*backends)[i];
}

}  // namespace aj::cuda
