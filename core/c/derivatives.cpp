// Derivatives in the C API (arrayjit/arrayjit.h, "derivatives"): aj_vjp and
// aj_jvp over a C callback that records ops, by aj::detail::vjp / jvp
// (arrayjit/autodiff.hpp). The callback runs as a traced function's does
// (core/c/function.cpp: run_recording): new handles for its inputs, the
// handles it makes released when it returns.
#include <string>
#include <vector>

#include "arrayjit/autodiff.hpp"
#include "core/c/boundary.hpp"

namespace aj::c_api {

std::vector<ArrayRef> run_recording(const std::string& who, const Function* tracing, const std::vector<ArrayRef>& inputs,
                                    int n_out, bool nulls, const std::function<aj_status(const aj_array*, aj_array*)>& call);

namespace {

// f as C++ sees it: inputs to outputs.
VectorFn callback_fn(aj_trace_fn f, void* context, int n_outputs, const char* who) {
  return [=](const std::vector<Array>& in) {
    std::vector<ArrayRef> refs;
    for (const Array& a : in) refs.push_back(ArrayRef{a, false, Scalar()});
    std::vector<ArrayRef> out = run_recording(std::string(who) + ": the callback ", nullptr, refs, n_outputs, false,
                                              [&](const aj_array* i, aj_array* o) { return f(context, i, o); });
    std::vector<Array> arrays;
    for (ArrayRef& r : out) arrays.push_back(std::move(r.array));
    return arrays;
  };
}

void check_counts(aj_trace_fn f, int32_t n_inputs, int32_t n_outputs, const aj_array* primals) {
  if (!f) c_error("null f");
  if (n_inputs < 0) c_error("negative n_inputs " + std::to_string(n_inputs));
  if (n_outputs < 1) c_error("n_outputs is " + std::to_string(n_outputs) + " (at least 1)");
  if (!primals && n_inputs > 0) c_error("null primals with n_inputs " + std::to_string(n_inputs));
}

// A list of n handles where a null one means zero (an empty Array).
std::vector<Array> optional_arrays(const aj_array* hs, int32_t n, const char* what) {
  if (!hs) c_error(std::string("null ") + what + " (pass one per array; a null handle, {0}, for zero)");
  std::vector<Array> out;
  for (int32_t i = 0; i < n; ++i) {
    const std::string name = std::string(what) + " " + std::to_string(i);
    out.push_back(hs[i]._id == 0 ? Array() : get_array(hs[i], name.c_str()).array);
  }
  return out;
}

// Hands n outputs and m derivatives over: every handle reserved first, so
// either all are written or (on an error) none.
void give(std::vector<Array> a, aj_array* a_out, std::vector<Array> b, aj_array* b_out) {
  std::vector<std::unique_ptr<Reservation>> slots;
  const std::size_t n = a_out ? a.size() : 0, m = b.size();
  for (std::size_t i = 0; i < n + m; ++i) slots.push_back(std::make_unique<Reservation>());
  for (std::size_t i = 0; i < n; ++i) a_out[i] = slots[i]->fill(std::move(a[i]));
  for (std::size_t i = 0; i < m; ++i) b_out[i] = slots[n + i]->fill(std::move(b[i]));
}

}  // namespace
}  // namespace aj::c_api

using namespace aj::c_api;

extern "C" {

aj_status aj_vjp(aj_trace_fn f, void* context, int32_t n_inputs, int32_t n_outputs, const aj_array* primals,
                 const aj_array* cotangents, aj_array* outputs, aj_array* grads) {
  if (outputs) {
    for (int32_t i = 0; i < n_outputs; ++i) outputs[i] = aj_array{0};
  }
  if (grads) {
    for (int32_t i = 0; i < n_inputs; ++i) grads[i] = aj_array{0};
  }
  return c_call("aj_vjp", [&] {
    check_counts(f, n_inputs, n_outputs, primals);
    if (!grads && n_inputs > 0) c_error("null grads (one per primal)");
    const std::vector<aj::Array> p = arrays_arg(primals, static_cast<std::size_t>(n_inputs));
    const std::vector<aj::Array> ct = optional_arrays(cotangents, n_outputs, "cotangent");
    auto [outs, g] = aj::detail::vjp(callback_fn(f, context, n_outputs, "aj_vjp"), p, ct, "vjp", aj::detail::effective_loc(aj::Loc::current()));
    if (static_cast<int32_t>(outs.size()) != n_outputs) c_error("f wrote " + std::to_string(outs.size()) + " outputs");
    give(std::move(outs), outputs, std::move(g), grads);
  });
}

aj_status aj_jvp(aj_trace_fn f, void* context, int32_t n_inputs, int32_t n_outputs, const aj_array* primals,
                 const aj_array* tangents, aj_array* outputs, aj_array* tangents_out) {
  if (outputs) {
    for (int32_t i = 0; i < n_outputs; ++i) outputs[i] = aj_array{0};
  }
  if (tangents_out) {
    for (int32_t i = 0; i < n_outputs; ++i) tangents_out[i] = aj_array{0};
  }
  return c_call("aj_jvp", [&] {
    check_counts(f, n_inputs, n_outputs, primals);
    if (!tangents_out) c_error("null tangents_out (one per output)");
    const std::vector<aj::Array> p = arrays_arg(primals, static_cast<std::size_t>(n_inputs));
    const std::vector<aj::Array> t = optional_arrays(tangents, n_inputs, "tangent");
    auto [outs, tans] = aj::detail::jvp(callback_fn(f, context, n_outputs, "aj_jvp"), p, t, "jvp", aj::detail::effective_loc(aj::Loc::current()));
    give(std::move(outs), outputs, std::move(tans), tangents_out);
  });
}

}  // extern "C"
