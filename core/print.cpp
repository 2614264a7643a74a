// Printing arrays NumPy-style: values (summarised with ... past 1000
// elements), then dtype and shape.
#include <charconv>
#include <cmath>
#include <ostream>
#include <sstream>
#include <string>

#include "arrayjit/arrayjit.hpp"
#include "core/trace.hpp"

namespace aj {

namespace {

constexpr std::int64_t kSummarizeAbove = 1000;
constexpr std::int64_t kEdgeItems = 3;

std::string format_value(double v, DType t) {
  if (t == DType::bool_) return v != 0 ? "true" : "false";
  if (!is_float(t)) {
    std::ostringstream os;
    os << static_cast<std::int64_t>(v);
    return os.str();
  }
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = t == DType::f32 ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v))
                           : std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".";
  return s;
}

struct Printer {
  const Shape& shape;
  DType dtype;
  const std::vector<std::string>& cells;  // formatted, row-major
  std::size_t width;
  bool summarize;

  // Indices shown along an axis of extent n.
  std::vector<std::int64_t> shown(std::int64_t n) const {
    std::vector<std::int64_t> v;
    if (summarize && n > 2 * kEdgeItems) {
      for (std::int64_t i = 0; i < kEdgeItems; ++i) v.push_back(i);
      v.push_back(-1);  // the "..." marker
      for (std::int64_t i = n - kEdgeItems; i < n; ++i) v.push_back(i);
    } else {
      for (std::int64_t i = 0; i < n; ++i) v.push_back(i);
    }
    return v;
  }

  void print(std::ostream& os, int axis, std::int64_t flat, int indent) const {
    if (axis == shape.ndim()) {
      const std::string& c = cells[static_cast<std::size_t>(flat)];
      os << std::string(width - c.size(), ' ') << c;
      return;
    }
    std::int64_t stride = 1;
    for (int d = axis + 1; d < shape.ndim(); ++d) stride *= shape[d];
    os << "[";
    auto idx = shown(shape[axis]);
    for (std::size_t k = 0; k < idx.size(); ++k) {
      if (k) {
        os << ",";
        if (axis == shape.ndim() - 1) {
          os << " ";
        } else {
          os << std::string(static_cast<std::size_t>(shape.ndim() - axis - 1), '\n')
             << std::string(static_cast<std::size_t>(indent + 1), ' ');
        }
      }
      if (idx[k] < 0) {
        os << "...";
        continue;
      }
      print(os, axis + 1, flat + idx[k] * stride, indent + 1);
    }
    os << "]";
  }
};

}  // namespace

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }
std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }

std::ostream& operator<<(std::ostream& os, const Array& a) {
  if (!a.valid()) return os << "array(<empty handle>)";
  std::vector<double> vals;
  std::vector<std::string> cells;
  const DType t = a.dtype();
  // i64 values beyond 2^53 would round through double: read integers exactly.
  if (is_integer(t)) {
    for (auto v : a.to_vector<std::int64_t>()) cells.push_back(std::to_string(v));
  } else {
    for (auto v : a.to_vector<double>()) cells.push_back(format_value(v, t));
  }
  std::size_t width = 0;
  for (auto& c : cells) width = std::max(width, c.size());
  const bool summarize = a.size() > kSummarizeAbove;
  os << "array(";
  if (a.ndim() == 0) {
    os << cells[0];
  } else {
    Printer p{a.shape(), t, cells, width, summarize};
    p.print(os, 0, 0, 6);
  }
  return os << ", dtype=" << dtype_name(t) << ", shape=" << a.shape().str() << ")";
}

const char* version() { return "0.1.0"; }

}  // namespace aj
