// The C API (arrayjit/arrayjit.h): version, errors, handles, creation,
// queries, evaluation and reading values out. The ops are in c/ops.cpp,
// traced functions in c/function.cpp, strided views in c/view.cpp.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "arrayjit/arrayjit.hpp"
#include "arrayjit/c_handle.hpp"
#include "base/semantics.hpp"
#include "core/api/print_numpy.hpp"
#include "core/api/trace.hpp"
#include "core/c/boundary.hpp"

namespace aj::c_api {

namespace {
thread_local std::string t_last_error;
// Set when the message itself could not be stored (out of memory).
thread_local const char* t_fallback = nullptr;

// What a C caller reads: no " (at FILE:LINE)" naming one of the C boundary's
// own sources (the line an op names is the caller's, and for C that is
// here): the caller's own line instead when it set one (aj_set_caller), else
// none; and no "aj::<fn>: " repeating the C function's own name.
std::string without_own_lines(const char* fn, std::string s) {
  const aj::Loc* caller = aj::detail::caller_loc_override();
  const std::string instead = caller ? " (at " + aj::loc_str(*caller) + ")" : "";
  static constexpr const char* kOwn[] = {"api.cpp",          "conv.cpp",    "cuda_queries.cpp",    "derivatives.cpp",
                                         "distributed.cpp",  "dlpack.cpp",  "function.cpp",        "handles.cpp",
                                         "host_callback.cpp", "io.cpp",     "linalg.cpp",          "ops.cpp",
                                         "profile.cpp",      "shape_functions.cpp", "view.cpp"};
  std::size_t from = 0;
  while ((from = s.find(" (at ", from)) != std::string::npos) {
    const std::size_t close = s.find(')', from);
    if (close == std::string::npos) break;
    const std::string file = s.substr(from + 5, s.find(':', from) - (from + 5));
    if (std::find(std::begin(kOwn), std::end(kOwn), file) != std::end(kOwn)) {
      s.replace(from, close + 1 - from, instead);
      from += instead.size();
    } else {
      from = close;
    }
  }
  // fn is the C name (aj_exp): the C++ op names itself aj::exp.
  const std::string name = std::string(fn).rfind("aj_", 0) == 0 ? std::string(fn).substr(3) : std::string(fn);
  // (aj_distributed_all_reduce is aj::distributed::all_reduce, which names itself aj::all_reduce.)
  const std::string ns = "distributed_";
  for (const std::string& own : {name, name.rfind(ns, 0) == 0 ? name.substr(ns.size()) : name}) {
    const std::string again = "aj::" + own + ": ";
    if (s.rfind(again, 0) == 0) s.erase(0, again.size());
  }
  return s;
}

// Reading values out converts with astype's rules (sem::convert), any strides.
template <class From, class To>
void convert_strided(const char* src, const std::vector<std::int64_t>& src_strides, char* dst,
                     const std::vector<std::int64_t>& dst_strides, const Shape& shape) {
  const int nd = shape.ndim();
  if (shape.numel() == 0) return;
  std::vector<std::int64_t> idx(static_cast<std::size_t>(nd), 0);
  for (;;) {
    From v;
    std::memcpy(&v, src, sizeof(From));
    const To w = sem::convert<To>(v);
    std::memcpy(dst, &w, sizeof(To));
    int d = nd - 1;
    for (; d >= 0; --d) {
      const auto du = static_cast<std::size_t>(d);
      src += src_strides[du], dst += dst_strides[du];
      if (++idx[du] < shape[d]) break;
      src -= src_strides[du] * shape[d], dst -= dst_strides[du] * shape[d];
      idx[du] = 0;
    }
    if (d < 0) return;
  }
}

template <class From>
void convert_to(DType as, const char* src, const std::vector<std::int64_t>& ss, char* dst,
                const std::vector<std::int64_t>& ds, const Shape& shape) {
  sem::visit_dtype(as, [&](auto to) { convert_strided<From, decltype(to)>(src, ss, dst, ds, shape); });
}

// The values of `a` into dst as `as`, strides in bytes (checked by the caller).
void read_out(const Array& a, DType as, char* dst, const std::vector<std::int64_t>& dst_strides) {
  Array host = a.device().host_addressable() ? a : a.to(Device::cpu());
  ArrayData d = host.data();
  const auto item = static_cast<std::int64_t>(itemsize(d.dtype));
  if (as == d.dtype) {
    std::vector<std::int64_t> elems;
    for (std::int64_t s : dst_strides) elems.push_back(s / item);
    host.copy_to(dst, elems);  // memcpy where both are row-major
    return;
  }
  std::vector<std::int64_t> src_strides;
  for (std::int64_t s : d.strides) src_strides.push_back(s * item);
  const char* src = static_cast<const char*>(d.ptr);
  sem::visit_dtype(d.dtype, [&](auto from) { convert_to<decltype(from)>(as, src, src_strides, dst, dst_strides, d.shape); });
}

}  // namespace

void set_last_error(const char* fn, const char* what) {
  try {
    t_last_error = std::string(fn) + ": " + without_own_lines(fn, what);
    t_fallback = nullptr;
  } catch (...) {  // out of memory for the message itself: a static one
    t_fallback = "out of memory (the error message could not be stored)";
  }
}

void clear_last_error() {
  t_last_error.clear();
  t_fallback = nullptr;
}

void c_error(const std::string& msg) { throw Error(Error::Kind::user, msg); }

void give_text(const std::string& text, char* buf, std::size_t cap, std::size_t* len) {
  if (cap > 0 && !buf) c_error("null buffer with capacity " + std::to_string(cap));
  if (len) *len = text.size();
  if (cap == 0) return;
  const std::size_t n = std::min(cap - 1, text.size());
  std::memcpy(buf, text.data(), n);
  buf[n] = '\0';
}


DType dtype_arg(int code, const char* what) {
  if (code < 0 || code >= kNumDTypes) c_error(std::string(what) + " " + std::to_string(code) + " is not a dtype");
  return static_cast<DType>(code);
}

aj_device_type device_code(Device::Kind k) {
  switch (k) {
    case Device::Kind::cpu: return AJ_DEVICE_CPU;
    case Device::Kind::cuda: return AJ_DEVICE_CUDA;
  }
  internal_error("no C device type for device kind " + std::to_string(static_cast<int>(k)));
}

Shape shape_arg(const std::int64_t* shape, std::int32_t ndim, const char* what) {
  if (ndim < 0) c_error(std::string("negative ndim ") + std::to_string(ndim) + " for the " + what);
  if (ndim > 0 && !shape) c_error(std::string("null ") + what + " with ndim " + std::to_string(ndim));
  if (ndim > trace::kMaxRank) {
    c_error(std::string("ndim ") + std::to_string(ndim) + " for the " + what + " (arrays have at most " +
            std::to_string(trace::kMaxRank) + " axes)");
  }
  return Shape(std::vector<std::int64_t>(shape, shape + ndim));
}

}  // namespace aj::c_api

using namespace aj::c_api;
using aj::Array;

extern "C" {

uint32_t aj_api_version(void) { return AJ_API_VERSION; }
const char* aj_version(void) { return aj::version(); }

const char* aj_host_info(void) {
  static const std::string info = [] {
    try {
      return aj::jit::host_info();
    } catch (const std::exception& e) {
      return std::string("error: ") + e.what();
    }
  }();
  return info.c_str();
}

const char* aj_last_error(void) { return t_fallback ? t_fallback : t_last_error.c_str(); }

void aj_set_caller(const char* file, int32_t line) {
  try {
    aj::detail::set_caller_loc(file, line);
  } catch (...) {  // out of memory interning the name: ops then name no line
    aj::detail::set_caller_loc(nullptr, 0);
  }
}

void aj_set_error(const char* message) {
  if (!message) return clear_last_error();
  try {
    t_last_error = message;
    t_fallback = nullptr;
  } catch (...) {
    t_fallback = "out of memory (the error message could not be stored)";
  }
}

const char* aj_dtype_name(aj_dtype dtype) {
  if (dtype < 0 || dtype >= aj::kNumDTypes) return nullptr;
  return aj::dtype_name(static_cast<aj::DType>(dtype));
}

size_t aj_dtype_itemsize(aj_dtype dtype) {
  if (dtype < 0 || dtype >= aj::kNumDTypes) return 0;
  return aj::itemsize(static_cast<aj::DType>(dtype));
}

// ---- handles ----

aj_status aj_array_release(aj_array a) {
  if (a._id == 0) return AJ_OK;
  return c_call("aj_array_release", [&] { release_array(a); });
}

aj_status aj_array_retain(aj_array a, aj_array* out) {
  return c_make("aj_array_retain", out, [&] { return get_array(a, "the array"); });
}

size_t aj_live_handles(void) {
  try {
    return live_handles();
  } catch (...) {
    return 0;
  }
}

// ---- creation ----

aj_status aj_zeros(const int64_t* shape, int32_t ndim, aj_dtype dtype, aj_array* out) {
  return c_make("aj_zeros", out, [&] { return aj::zeros(shape_arg(shape, ndim), dtype_arg(dtype, "dtype")); });
}
aj_status aj_ones(const int64_t* shape, int32_t ndim, aj_dtype dtype, aj_array* out) {
  return c_make("aj_ones", out, [&] { return aj::ones(shape_arg(shape, ndim), dtype_arg(dtype, "dtype")); });
}
aj_status aj_full(const int64_t* shape, int32_t ndim, double value, aj_dtype dtype, aj_array* out) {
  return c_make("aj_full", out,
                [&] { return aj::full(shape_arg(shape, ndim), value, dtype_arg(dtype, "dtype")); });
}
aj_status aj_arange(int64_t n, aj_dtype dtype, aj_array* out) {
  return c_make("aj_arange", out, [&] { return aj::arange(n, dtype_arg(dtype, "dtype")); });
}
aj_status aj_arange_range(double start, double stop, double step, aj_dtype dtype, aj_array* out) {
  return c_make("aj_arange_range", out, [&] { return aj::arange(start, stop, step, dtype_arg(dtype, "dtype")); });
}
aj_status aj_linspace(double start, double stop, int64_t num, aj_dtype dtype, aj_array* out) {
  return c_make("aj_linspace", out, [&] { return aj::linspace(start, stop, num, dtype_arg(dtype, "dtype")); });
}
aj_status aj_eye(int64_t n, int64_t m, int64_t k, aj_dtype dtype, aj_array* out) {
  return c_make("aj_eye", out, [&] { return aj::eye(n, m, k, dtype_arg(dtype, "dtype")); });
}
void aj_random_seed(uint64_t seed) { aj::random::seed(seed); }
aj_status aj_random_uniform(const int64_t* shape, int32_t ndim, double lo, double hi, aj_dtype dtype,
                            aj_array* out) {
  return c_make("aj_random_uniform", out, [&] {
    return aj::random::uniform(shape_arg(shape, ndim), lo, hi, dtype_arg(dtype, "dtype"));
  });
}
aj_status aj_random_normal(const int64_t* shape, int32_t ndim, double mean, double stddev, aj_dtype dtype,
                           aj_array* out) {
  return c_make("aj_random_normal", out, [&] {
    return aj::random::normal(shape_arg(shape, ndim), mean, stddev, dtype_arg(dtype, "dtype"));
  });
}
aj_status aj_random_randint(const int64_t* shape, int32_t ndim, int64_t lo, int64_t hi, aj_dtype dtype, aj_array* out) {
  return c_make("aj_random_randint", out,
                [&] { return aj::random::randint(shape_arg(shape, ndim), lo, hi, dtype_arg(dtype, "dtype")); });
}
aj_status aj_random_permutation(int64_t n, aj_array* out) {
  return c_make("aj_random_permutation", out, [&] { return aj::random::permutation(n); });
}
aj_status aj_random_bernoulli(const int64_t* shape, int32_t ndim, double p, aj_array* out) {
  return c_make("aj_random_bernoulli", out, [&] { return aj::random::bernoulli(shape_arg(shape, ndim), p); });
}
aj_status aj_random_fold_in(aj_array key, int64_t data, aj_array* out) {
  return c_make("aj_random_fold_in", out, [&] {
    return aj::random::fold_in(aj::random::Key(get_array(key, "key").array), data).array();
  });
}
aj_status aj_random_key(int64_t seed, aj_array* out) {
  return c_make("aj_random_key", out, [&] { return aj::random::key(seed).array(); });
}
aj_status aj_random_split(aj_array key, int32_t n, aj_array* outs) {
  return c_make_many("aj_random_split", outs, n < 0 ? 0 : n, [&] {
    if (n < 0) c_error("negative n " + std::to_string(n));
    std::vector<aj::Array> keys;
    for (const aj::random::Key& k : aj::random::split(aj::random::Key(get_array(key, "key").array), n)) {
      keys.push_back(k.array());
    }
    return keys;
  });
}
aj_status aj_random_bits(aj_array key, const int64_t* shape, int32_t ndim, aj_array* out) {
  return c_make("aj_random_bits", out, [&] {
    return aj::random::bits(aj::random::Key(get_array(key, "key").array), shape_arg(shape, ndim));
  });
}
aj_status aj_random_key_uniform(aj_array key, const int64_t* shape, int32_t ndim, double lo, double hi, aj_dtype dtype,
                                aj_array* out) {
  return c_make("aj_random_key_uniform", out, [&] {
    return aj::random::uniform(aj::random::Key(get_array(key, "key").array), shape_arg(shape, ndim), lo, hi,
                               dtype_arg(dtype, "dtype"));
  });
}
aj_status aj_random_key_normal(aj_array key, const int64_t* shape, int32_t ndim, double mean, double stddev,
                               aj_dtype dtype, aj_array* out) {
  return c_make("aj_random_key_normal", out, [&] {
    return aj::random::normal(aj::random::Key(get_array(key, "key").array), shape_arg(shape, ndim), mean, stddev,
                              dtype_arg(dtype, "dtype"));
  });
}
aj_status aj_random_key_bernoulli(aj_array key, const int64_t* shape, int32_t ndim, double p, aj_array* out) {
  return c_make("aj_random_key_bernoulli", out, [&] {
    return aj::random::bernoulli(aj::random::Key(get_array(key, "key").array), shape_arg(shape, ndim), p);
  });
}
aj_status aj_random_exponential(const int64_t* shape, int32_t ndim, double scale, aj_dtype dtype, aj_array* out) {
  return c_make("aj_random_exponential", out,
                [&] { return aj::random::exponential(shape_arg(shape, ndim), scale, dtype_arg(dtype, "dtype")); });
}
aj_status aj_random_gumbel(const int64_t* shape, int32_t ndim, double loc, double scale, aj_dtype dtype, aj_array* out) {
  return c_make("aj_random_gumbel", out,
                [&] { return aj::random::gumbel(shape_arg(shape, ndim), loc, scale, dtype_arg(dtype, "dtype")); });
}
aj_status aj_random_truncated_normal(const int64_t* shape, int32_t ndim, double lower, double upper, aj_dtype dtype,
                                     aj_array* out) {
  return c_make("aj_random_truncated_normal", out, [&] {
    return aj::random::truncated_normal(shape_arg(shape, ndim), lower, upper, dtype_arg(dtype, "dtype"));
  });
}
aj_status aj_random_gamma(const int64_t* shape, int32_t ndim, double alpha, double scale, aj_dtype dtype, aj_array* out) {
  return c_make("aj_random_gamma", out,
                [&] { return aj::random::gamma(shape_arg(shape, ndim), alpha, scale, dtype_arg(dtype, "dtype")); });
}
aj_status aj_random_beta(const int64_t* shape, int32_t ndim, double a, double b, aj_dtype dtype, aj_array* out) {
  return c_make("aj_random_beta", out,
                [&] { return aj::random::beta(shape_arg(shape, ndim), a, b, dtype_arg(dtype, "dtype")); });
}
aj_status aj_random_poisson(const int64_t* shape, int32_t ndim, double lam, aj_array* out) {
  return c_make("aj_random_poisson", out, [&] { return aj::random::poisson(shape_arg(shape, ndim), lam); });
}
aj_status aj_random_categorical(aj_array logits, int32_t axis, aj_array* out) {
  return c_make("aj_random_categorical", out,
                [&] { return aj::random::categorical(get_array(logits, "logits").array, axis); });
}
aj_status aj_random_multinomial(int64_t n, aj_array pvals, aj_array* out) {
  return c_make("aj_random_multinomial", out,
                [&] { return aj::random::multinomial(n, get_array(pvals, "pvals").array); });
}
aj_status aj_random_choice(int64_t n, int64_t count, int replace, aj_array p, aj_array* out) {
  return c_make("aj_random_choice", out, [&] {
    std::optional<aj::Array> pa;
    if (p._id != 0) pa = get_array(p, "p").array;
    return aj::random::choice(n, count, replace != 0, pa);
  });
}
aj_status aj_random_shuffle(aj_array x, int32_t axis, aj_array* out) {
  return c_make("aj_random_shuffle", out, [&] { return aj::random::shuffle(get_array(x, "x").array, axis); });
}

aj_status aj_scalar_f64(double value, aj_array* out) {
  return c_make("aj_scalar_f64", out,
                [&] { return ArrayRef{aj::full({}, value, aj::DType::f64), true, aj::Scalar(value)}; });
}
aj_status aj_scalar_i64(int64_t value, aj_array* out) {
  return c_make("aj_scalar_i64", out, [&] {
    return ArrayRef{aj::full({}, value, aj::DType::i64), true, aj::Scalar(static_cast<std::int64_t>(value))};
  });
}
aj_status aj_scalar_u64(uint64_t value, aj_array* out) {
  return c_make("aj_scalar_u64", out, [&] {
    return ArrayRef{aj::full({}, value, aj::DType::u64), true, aj::Scalar(static_cast<std::uint64_t>(value))};
  });
}
aj_status aj_scalar_bool(int value, aj_array* out) {
  return c_make("aj_scalar_bool", out, [&] {
    return ArrayRef{aj::full({}, value != 0, aj::DType::bool_), true, aj::Scalar(value != 0)};
  });
}

// ---- evaluation, reading out ----

aj_status aj_eval(aj_array a) {
  return c_call("aj_eval", [&] {
    check_not_tracing("aj_eval");
    get_array(a, "the array").array.eval();
  });
}

aj_status aj_eval_many(const aj_array* xs, size_t n) {
  return c_call("aj_eval_many", [&] {
    check_not_tracing("aj_eval_many");
    if (!xs && n > 0) c_error("null array list with n " + std::to_string(n));
    std::vector<Array> arrays;
    for (size_t i = 0; i < n; ++i) arrays.push_back(get_array(xs[i], "an array of the list").array);
    aj::eval(arrays);
  });
}

aj_status aj_eval_into(aj_array a, void* dst, size_t dst_bytes) {
  return c_call("aj_eval_into", [&] {
    check_not_tracing("aj_eval_into");
    Array x = get_array(a, "the array").array;
    const auto bytes = static_cast<std::size_t>(x.size()) * aj::itemsize(x.dtype());
    if (dst_bytes != bytes) {
      c_error(std::to_string(dst_bytes) + " bytes given for " + aj::trace::describe(x) + " (" +
              std::to_string(bytes) + " bytes)");
    }
    x.eval_into(dst);
  });
}

aj_status aj_array_read(aj_array a, aj_dtype as, void* dst, size_t dst_bytes, const int64_t* strides) {
  return c_call("aj_array_read", [&] {
    check_not_tracing("aj_array_read");
    Array x = get_array(a, "the array").array;
    const aj::DType t = dtype_arg(as, "dtype");
    const auto item = static_cast<std::int64_t>(aj::itemsize(t));
    const std::string what = aj::trace::describe(x) + " read as " + aj::dtype_name(t);
    const aj::Shape& shape = x.shape();
    std::vector<std::int64_t> st;
    std::size_t need = static_cast<std::size_t>(x.size()) * static_cast<std::size_t>(item);
    if (!strides) {
      if (dst_bytes != need) {
        c_error(std::to_string(dst_bytes) + " bytes given for " + what + " (" + std::to_string(need) + " bytes)");
      }
      for (std::int64_t s : aj::contiguous_strides(shape)) st.push_back(s * item);
    } else {
      std::int64_t last = 0;  // byte offset of the last element
      for (int d = 0; d < shape.ndim(); ++d) {
        const std::int64_t s = strides[d];
        if (s < 0 || s % item != 0 || (s == 0 && shape[d] > 1)) {
          c_error("stride " + std::to_string(s) + " bytes of axis " + std::to_string(d) + " for " + what +
                  " (strides must be non-negative multiples of the item size, 0 only for extent 1)");
        }
        if (shape[d] > 0) last += s * (shape[d] - 1);
        st.push_back(s);
      }
      need = x.size() == 0 ? 0 : static_cast<std::size_t>(last + item);
      if (dst_bytes < need) {
        c_error(std::to_string(dst_bytes) + " bytes given for " + what + " with these strides (the last element "
                "ends at byte " + std::to_string(need) + ")");
      }
    }
    if (!dst && need > 0) c_error("null destination for " + what);
    if (need > 0) read_out(x, t, static_cast<char*>(dst), st);
  });
}

aj_status aj_array_item_f64(aj_array a, double* out) {
  return c_call("aj_array_item_f64", [&] {
    check_not_tracing("aj_array_item_f64");
    if (!out) c_error("null output pointer");
    *out = get_array(a, "the array").array.item<double>();
  });
}

aj_status aj_array_item_i64(aj_array a, int64_t* out) {
  return c_call("aj_array_item_i64", [&] {
    check_not_tracing("aj_array_item_i64");
    if (!out) c_error("null output pointer");
    *out = get_array(a, "the array").array.item<std::int64_t>();
  });
}

// ---- queries ----

aj_status aj_array_dtype(aj_array a, aj_dtype* out) {
  return c_call("aj_array_dtype", [&] {
    if (!out) c_error("null output pointer");
    *out = static_cast<aj_dtype>(get_array(a, "the array").array.dtype());
  });
}

aj_status aj_array_ndim(aj_array a, int32_t* out) {
  return c_call("aj_array_ndim", [&] {
    if (!out) c_error("null output pointer");
    *out = get_array(a, "the array").array.ndim();
  });
}

aj_status aj_array_shape(aj_array a, int64_t* shape, int32_t capacity) {
  return c_call("aj_array_shape", [&] {
    Array x = get_array(a, "the array").array;
    const aj::Shape& s = x.shape();
    if (capacity < s.ndim()) {
      c_error("capacity " + std::to_string(capacity) + " is less than the rank of " + aj::trace::describe(x));
    }
    if (!shape && s.ndim() > 0) c_error("null shape pointer");
    for (int d = 0; d < s.ndim(); ++d) shape[d] = s[d];
  });
}

aj_status aj_array_size(aj_array a, int64_t* out) {
  return c_call("aj_array_size", [&] {
    if (!out) c_error("null output pointer");
    *out = get_array(a, "the array").array.size();
  });
}

aj_status aj_array_device(aj_array a, aj_device_type* type, int32_t* device_id) {
  return c_call("aj_array_device", [&] {
    if (!type || !device_id) c_error("null output pointer");
    const aj::Device d = get_array(a, "the array").array.device();
    *type = device_code(d.kind);
    *device_id = d.index;
  });
}

aj_status aj_array_is_evaluated(aj_array a, int* out) {
  return c_call("aj_array_is_evaluated", [&] {
    if (!out) c_error("null output pointer");
    *out = get_array(a, "the array").array.is_evaluated() ? 1 : 0;
  });
}

aj_status aj_array_to_string(aj_array a, char* buf, size_t cap, size_t* len) {
  return c_call("aj_array_to_string", [&] {
    check_not_tracing("aj_array_to_string");
    std::ostringstream os;
    os << get_array(a, "the array").array;
    give_text(os.str(), buf, cap, len);
  });
}

aj_status aj_array_dump(aj_array a, char* buf, size_t cap, size_t* len) {
  return c_call("aj_array_dump", [&] { give_text(aj::dump({get_array(a, "the array").array}), buf, cap, len); });
}

aj_status aj_array_format(aj_array a, aj_format_style style, char* buf, size_t cap, size_t* len) {
  return c_call("aj_array_format", [&] {
    check_not_tracing("aj_array_format");
    const aj::Array& x = get_array(a, "the array").array;
    switch (style) {
      case AJ_FORMAT_REPR: {
        std::ostringstream os;
        os << x;
        give_text(os.str(), buf, cap, len);
        return;
      }
      case AJ_FORMAT_STR: give_text(aj::array2string(x), buf, cap, len); return;
      case AJ_FORMAT_NUMPY_REPR: give_text(aj::numpy_repr(x), buf, cap, len); return;
    }
    c_error("style " + std::to_string(style) + " is not an aj_format_style (AJ_FORMAT_REPR, AJ_FORMAT_STR, "
            "AJ_FORMAT_NUMPY_REPR)");
  });
}

const char* aj_op_names(aj_op_list list) {
#define AJ_NAME_(name) " " #name
  // Each list's names, the leading space dropped.
  static const char* const kLists[] = {AJ_UNARY_OPS(AJ_NAME_) + 1, AJ_BINARY_OPS(AJ_NAME_) + 1,
                                       AJ_TERNARY_OPS(AJ_NAME_) + 1, AJ_REDUCE_OPS(AJ_NAME_) + 1,
                                       AJ_PRODUCT_OPS(AJ_NAME_) + 1};
#undef AJ_NAME_
  if (list < 0 || list >= static_cast<aj_op_list>(std::size(kLists))) return nullptr;
  return kLists[list];
}

// ---- inspection, switches, counters ----

namespace {
std::vector<aj::Array> arrays_of(const aj_array* xs, size_t n) {
  if (!xs && n > 0) c_error("null array list with n " + std::to_string(n));
  std::vector<aj::Array> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(get_array(xs[i], "an array of the list").array);
  return out;
}
std::string text_arg(const char* s, const char* what) {
  if (!s) c_error(std::string("null ") + what);
  return s;
}
}  // namespace

aj_status aj_explain(const aj_array* xs, size_t n, char* buf, size_t cap, size_t* len) {
  return c_call("aj_explain", [&] { give_text(aj::explain(arrays_of(xs, n)), buf, cap, len); });
}
aj_status aj_to_dot(const aj_array* xs, size_t n, int plan, char* buf, size_t cap, size_t* len) {
  return c_call("aj_to_dot", [&] {
    aj::DotOptions o;
    o.plan = plan != 0;
    give_text(aj::to_dot(arrays_of(xs, n), o), buf, cap, len);
  });
}
aj_status aj_jit_kernel_ir(aj_array a, int assembly, char* buf, size_t cap, size_t* len) {
  return c_call("aj_jit_kernel_ir", [&] {
    give_text(aj::jit::kernel_ir(get_array(a, "the array").array, assembly != 0), buf, cap, len);
  });
}
aj_status aj_set_log(const char* channels) {
  return c_call("aj_set_log", [&] { aj::set_log(text_arg(channels, "channels")); });
}
const char* aj_llvm_version(void) { return aj::llvm_version(); }

int aj_jit_enabled(void) { return aj::jit::enabled() ? 1 : 0; }
void aj_jit_set_enabled(int on) { aj::jit::set_enabled(on != 0); }
void aj_interrupt(int on) { aj::interrupt(on != 0); }
int32_t aj_jit_num_threads(void) { return aj::jit::num_threads(); }
aj_status aj_jit_set_num_threads(int32_t n) {
  return c_call("aj_jit_set_num_threads", [&] {
    if (n < 0) c_error("negative thread count " + std::to_string(n) + " (0 means all cores)");
    aj::jit::set_num_threads(n);
  });
}
aj_status aj_jit_cache_dir(char* buf, size_t cap, size_t* len) {
  return c_call("aj_jit_cache_dir", [&] { give_text(aj::jit::cache_dir(), buf, cap, len); });
}
aj_status aj_jit_set_cache_dir(const char* dir) {
  return c_call("aj_jit_set_cache_dir", [&] { aj::jit::set_cache_dir(text_arg(dir, "directory")); });
}
aj_status aj_jit_clear_memory_cache(void) {
  return c_call("aj_jit_clear_memory_cache", [&] { aj::jit::clear_memory_cache(); });
}
int32_t aj_jit_tiers(void) {
  switch (aj::jit::tiers()) {
    case aj::jit::Tiers::automatic: return AJ_TIERS_AUTOMATIC;
    case aj::jit::Tiers::full: return AJ_TIERS_FULL;
    case aj::jit::Tiers::quick: return AJ_TIERS_QUICK;
  }
  return AJ_TIERS_AUTOMATIC;
}
aj_status aj_jit_set_tiers(int32_t tiers) {
  return c_call("aj_jit_set_tiers", [&] {
    if (tiers != AJ_TIERS_AUTOMATIC && tiers != AJ_TIERS_FULL && tiers != AJ_TIERS_QUICK) {
      c_error("tiers " + std::to_string(tiers) + ": use AJ_TIERS_AUTOMATIC (0), AJ_TIERS_FULL (1) or AJ_TIERS_QUICK (2)");
    }
    aj::jit::set_tiers(tiers == AJ_TIERS_FULL ? aj::jit::Tiers::full
                       : tiers == AJ_TIERS_QUICK ? aj::jit::Tiers::quick
                                                 : aj::jit::Tiers::automatic);
  });
}

aj_status aj_jit_finish_tier_ups(void) {
  return c_call("aj_jit_finish_tier_ups", [&] { aj::jit::finish_tier_ups(); });
}

aj_status aj_trim_memory(void) {
  return c_call("aj_trim_memory", [&] { aj::trim_memory(); });
}
aj_status aj_set_memory_limit(size_t bytes) {
  return c_call("aj_set_memory_limit", [&] { aj::set_memory_limit(bytes); });
}
size_t aj_memory_limit(void) { return aj::memory_limit(); }
size_t aj_cached_bytes(void) { return aj::cached_bytes(); }

void aj_set_debug(int on) { aj::set_debug(on != 0); }
int aj_debug(void) { return aj::debug() ? 1 : 0; }

extern "C++" namespace {
// A struct of API 1.2 or later (struct_size at least this header's size: the
// first version of these structs).
template <class T>
void check_struct(const T* p, const char* what, const char* type) {
  if (!p) c_error(std::string("null ") + what);
  if (p->struct_size < sizeof(T)) {
    c_error(std::string(what) + "->struct_size is " + std::to_string(p->struct_size) + ", not sizeof(" + type +
            ") (" + std::to_string(sizeof(T)) + ")");
  }
}
}  // namespace

aj_status aj_printoptions(aj_print_options* options) {
  return c_call("aj_printoptions", [&] {
    check_struct(options, "options", "aj_print_options");
    const aj::PrintOptions o = aj::printoptions();
    options->precision = o.precision;
    options->edgeitems = o.edgeitems;
    options->threshold = o.threshold;
    options->linewidth = o.linewidth;
    options->suppress = o.suppress ? 1 : 0;
  });
}
aj_status aj_set_printoptions(const aj_print_options* options) {
  return c_call("aj_set_printoptions", [&] {
    check_struct(options, "options", "aj_print_options");
    aj::PrintOptions o;
    o.precision = options->precision;
    o.edgeitems = options->edgeitems;
    o.threshold = options->threshold;
    o.linewidth = options->linewidth;
    o.suppress = options->suppress != 0;
    aj::set_printoptions(o);
  });
}

// Every counter of aj::Stats is a field of aj_stats_counts (both are all
// uint64_t, so a counter added to one alone changes the size).
#define AJ_STATS_COUNT_(name) +1
static_assert((0 AJ_STATS_FIELDS(AJ_STATS_COUNT_)) * sizeof(uint64_t) == sizeof(aj::Stats),
              "aj::Stats has a counter AJ_STATS_FIELDS (arrayjit.h) lacks");
static_assert((0 AJ_STATS_FIELDS(AJ_STATS_COUNT_)) * sizeof(uint64_t) ==
                  sizeof(aj_stats_counts) - offsetof(aj_stats_counts, evals),
              "aj_stats_counts: one uint64_t per field");
#undef AJ_STATS_COUNT_

aj_status aj_stats(aj_stats_counts* out) {
  return c_call("aj_stats", [&] {
    check_struct(out, "out", "aj_stats_counts");
    const aj::Stats s = aj::stats();
#define AJ_STATS_PUT_(name) out->name = s.name;
    AJ_STATS_FIELDS(AJ_STATS_PUT_)
#undef AJ_STATS_PUT_
  });
}
void aj_reset_stats(void) { aj::reset_stats(); }

}  // extern "C"

namespace aj {
aj_array to_c(Array a) { return c_api::new_array(std::move(a)); }
Array from_c(aj_array h, Loc loc) {
  try {
    return c_api::get_array(h, "the handle").array;
  } catch (const c_api::HandleError& e) {
    user_error("from_c", e.what(), loc);
  }
}
}  // namespace aj
