// Printing arrays as NumPy 1.24 prints them (numpy/core/arrayprint.py, legacy=False,
// floatmode='maxprec', sign='-'), with the options of print.hpp.
//
//   operator<<      array([[0.1, 2. ],          NumPy's repr: "array(" prefix, ", " between
//                          [3. , 4. ]], dtype=f32, shape=[2, 2])   items, then a trailer
//   array2string    [[0.1 2. ]                  NumPy's str / np.array2string: " " between
//                    [3.  4. ]]                 items, no prefix
//
// The trailer always names the dtype and the shape (C++ has no dtype a reader can
// assume, and the shape is what a C++ reader most often checks), and the device
// when it is not the CPU (", device=cuda:0", as PyTorch prints); like NumPy's
// "dtype=...)" it moves to a line of its own when the last line would pass the
// line width. Empty arrays print "[]" whatever their shape, since the trailer
// shows it.
//
// Floats: each value is its shortest text that round-trips in its own type (an f32
// prints as NumPy prints a float32, an f16 as a float16), cut to `precision` digits after the point
// when longer (the exact value rounded half-to-even). Scientific notation is used
// when a non-zero finite value is >= 1e8, or, unless `suppress`, when one is < 1e-4
// or the largest is over 1000 times the smallest; all values then show as many
// digits as the longest needs, read further from the exact value. Decimal points
// (or exponents) align; nan and inf are right-aligned to the same width.
// bf16 prints as NumPy prints ml_dtypes' bfloat16, which is no NumPy float type:
// each value as C++ streams the float (6 significant digits: 0.100098, 2, -inf,
// nan), separated, not aligned.
// Integers right-align; bools print " True"/"False" (just "True" at rank 0).
// Arrays of more than `threshold` elements show `edgeitems` items at each end of
// every longer axis, with "..." between, and only the items shown decide the
// format. Rows wrap at `linewidth`; an axis of rank k > 1 separates its items
// with k-1 newlines.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <mutex>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "arrayjit/array.hpp"
#include "arrayjit/print.hpp"
#include "base/semantics.hpp"
#include "core/api/print_numpy.hpp"

namespace aj {

namespace {

// ---- options ---------------------------------------------------------------------------

std::mutex options_mutex;
PrintOptions current_options;

void check_options(const PrintOptions& o, const char* op, const Loc& loc) {
  auto bad = [&](const char* name, long long v, const char* need) {
    user_error(op, std::string(name) + " must be " + need + ", got " + std::to_string(v), loc);
  };
  if (o.precision < 0) bad("precision", o.precision, ">= 0");
  if (o.threshold < 0) bad("threshold", o.threshold, ">= 0");
  if (o.edgeitems < 0) bad("edgeitems", o.edgeitems, ">= 0");
  if (o.linewidth < 1) bad("linewidth", o.linewidth, ">= 1");
}

// ---- decimal digits of one float ----------------------------------------------------------

// A finite value as sign, digits and the decimal exponent of the first digit:
// -1.25e-3 is {true, "125", -3}. Zero is {sign, "0", 0}.
struct Digits {
  bool negative;
  std::string digits;
  int exp10;
};

// The shortest scientific text of an f16 value x (exact in double) that reads
// back as the same f16: the fewest digits whose correctly rounded text
// round-trips, as std::to_chars finds for float and double.
std::to_chars_result shortest_f16(char* buf, char* end, double x) {
  const std::uint16_t bits = f16(x).bits;
  for (int digits = 0; digits < 16; ++digits) {
    auto r = std::to_chars(buf, end, x, std::chars_format::scientific, digits);
    double back = 0;
    std::from_chars(buf, r.ptr, back);
    if (f16(back).bits == bits) return r;
  }
  return std::to_chars(buf, end, x, std::chars_format::scientific);
}

// The shortest digits that round-trip in the value's own type (precision < 0),
// or the exact value rounded half-to-even to 1 + precision significant digits.
Digits scientific_digits(double x, DType t, int precision) {
  const bool is_f32 = t == DType::f32;
  std::vector<char> text(static_cast<std::size_t>(std::max(precision, 0)) + 32);
  char* buf = text.data();
  char* end = buf + text.size();
  std::to_chars_result r;
  if (t == DType::f16 && precision < 0) {
    r = shortest_f16(buf, end, x);
  } else if (is_f32) {
    float f = static_cast<float>(x);
    r = precision < 0 ? std::to_chars(buf, end, f, std::chars_format::scientific)
                      : std::to_chars(buf, end, f, std::chars_format::scientific, precision);
  } else {
    r = precision < 0 ? std::to_chars(buf, end, x, std::chars_format::scientific)
                      : std::to_chars(buf, end, x, std::chars_format::scientific, precision);
  }
  std::string_view s(buf, static_cast<std::size_t>(r.ptr - buf));  // "-1.25e-03"
  Digits d{s.front() == '-', {}, 0};
  if (d.negative) s.remove_prefix(1);
  const std::size_t e = s.find('e');
  for (char c : s.substr(0, e))
    if (c != '.') d.digits += c;
  std::string_view exp = s.substr(e + 1);
  if (exp.front() == '+') exp.remove_prefix(1);
  std::from_chars(exp.data(), exp.data() + exp.size(), d.exp10);
  return d;
}

// Positional text split at the point: "-12" and "5" for -12.5.
struct Positional {
  std::string whole;  // with the sign
  std::string frac;
};

// NumPy's dragon4_positional(unique=True, precision, trim='.'): the shortest
// digits if they need no more than `precision` after the point, else the exact
// value rounded there; trailing zeros after the point dropped. Whole digits are
// always exact: NumPy prints f32 74521808 so, not as its shortest 74521810.
Positional positional(double x, DType t, int precision) {
  const bool is_f32 = t == DType::f32;
  const Digits d = scientific_digits(x, t, -1);
  const int len = static_cast<int>(d.digits.size());
  const int frac_digits = len - 1 - d.exp10;
  Positional p;
  if (frac_digits >= 0 && frac_digits <= precision) {
    if (d.exp10 >= 0) {
      p.whole = d.digits.substr(0, static_cast<std::size_t>(d.exp10 + 1));
      p.frac = d.digits.substr(static_cast<std::size_t>(d.exp10 + 1));
    } else {
      p.whole = "0";
      p.frac = std::string(static_cast<std::size_t>(-d.exp10 - 1), '0') + d.digits;
    }
    if (d.negative) p.whole.insert(0, "-");
    return p;
  }
  // Rounded to `precision` digits after the point, or to a whole number when the
  // shortest digits stop before the point. Positional notation is only chosen
  // below 1e8, so the whole part is short.
  const int places = frac_digits < 0 ? 0 : precision;
  std::vector<char> text(static_cast<std::size_t>(places) + 32);
  char* buf = text.data();
  char* end = buf + text.size();
  auto r = is_f32 ? std::to_chars(buf, end, static_cast<float>(x), std::chars_format::fixed, places)
                  : std::to_chars(buf, end, x, std::chars_format::fixed, places);
  std::string s(buf, r.ptr);
  const std::size_t dot = s.find('.');
  p.whole = s.substr(0, dot);
  if (dot != std::string::npos) p.frac = s.substr(dot + 1);
  while (!p.frac.empty() && p.frac.back() == '0') p.frac.pop_back();
  return p;
}

// Scientific text split as "-1", "25", -3 for -1.25e-03. `min_digits` digits after
// the point at least (read from the exact value), `precision` at most; trailing
// zeros are dropped when `trim`.
struct Scientific {
  std::string lead;  // sign and first digit
  std::string frac;
  int exp10;
};

Scientific scientific(double x, DType t, int precision, int min_digits, bool trim) {
  Digits d = scientific_digits(x, t, -1);
  const int after = static_cast<int>(d.digits.size()) - 1;
  if (after > precision) d = scientific_digits(x, t, precision);
  else if (after < min_digits) d = scientific_digits(x, t, min_digits);
  Scientific s;
  s.lead = std::string(d.negative ? "-" : "") + d.digits[0];
  s.frac = d.digits.substr(1);
  if (trim)
    while (!s.frac.empty() && s.frac.back() == '0') s.frac.pop_back();
  s.exp10 = d.exp10;
  return s;
}

// The exponent's digits, at least two.
std::string exponent_digits(int exp10) {
  std::string e = std::to_string(std::abs(exp10));
  return e.size() < 2 ? "0" + e : e;
}

// ---- formats: one per array, fixed by the values shown ------------------------------------

// NumPy's FloatingFormat: a first pass over the shown values fixes the notation,
// the digits and the padding; every value is then written to the same width.
class FloatFormat {
 public:
  FloatFormat(const std::vector<double>& shown, DType t, const PrintOptions& o)
      : t_(t), precision_(o.precision) {
    std::vector<double> finite;
    for (double v : shown)
      if (std::isfinite(v)) finite.push_back(v);
    choose_notation(finite, o.suppress);
    if (exp_) {
      int frac = 0;
      for (double v : finite) {
        Scientific s = scientific(v, t_, precision_, 0, true);
        pad_left_ = std::max(pad_left_, static_cast<int>(s.lead.size()));
        frac = std::max(frac, static_cast<int>(s.frac.size()));
        exp_digits_ = std::max(exp_digits_, static_cast<int>(exponent_digits(s.exp10).size()));
      }
      precision_ = min_digits_ = frac;  // every value shows the same digits
      pad_right_ = exp_digits_ + 2 + frac;
    } else {
      for (double v : finite) {
        Positional p = positional(v, t_, precision_);
        pad_left_ = std::max(pad_left_, static_cast<int>(p.whole.size()));
        pad_right_ = std::max(pad_right_, static_cast<int>(p.frac.size()));
      }
    }
    if (finite.size() != shown.size()) {  // room for nan, inf, -inf
      bool neg_inf = std::any_of(shown.begin(), shown.end(),
                                 [](double v) { return std::isinf(v) && v < 0; });
      pad_left_ = std::max({pad_left_, 3 - (pad_right_ + 1), 3 + neg_inf - (pad_right_ + 1)});
    }
  }

  std::string operator()(double v) const {
    if (!std::isfinite(v)) {
      std::string t = std::isnan(v) ? "nan" : v < 0 ? "-inf" : "inf";
      return pad(pad_left_ + pad_right_ + 1 - static_cast<int>(t.size())) + t;
    }
    if (exp_) {
      Scientific s = scientific(v, t_, precision_, min_digits_, false);
      std::string e = exponent_digits(s.exp10);
      e.insert(0, static_cast<std::size_t>(exp_digits_) - e.size(), '0');  // as the longest
      return pad(pad_left_ - static_cast<int>(s.lead.size())) + s.lead + "." + s.frac + "e" +
             (s.exp10 < 0 ? "-" : "+") + e;
    }
    Positional p = positional(v, t_, precision_);
    return pad(pad_left_ - static_cast<int>(p.whole.size())) + p.whole + "." + p.frac +
           pad(pad_right_ - static_cast<int>(p.frac.size()));
  }

 private:
  static std::string pad(int n) {
    return std::string(static_cast<std::size_t>(std::max(n, 0)), ' ');
  }

  void choose_notation(const std::vector<double>& finite, bool suppress) {
    double max_abs = 0, min_abs = INFINITY;
    for (double v : finite) {
      if (v == 0) continue;
      max_abs = std::max(max_abs, std::abs(v));
      min_abs = std::min(min_abs, std::abs(v));
    }
    if (max_abs == 0) return;
    // NumPy divides in the array's type: an f32 (or f16) ratio may overflow
    // to inf, and rounds.
    const double ratio = sem::visit_dtype(t_, [&](auto tag) -> double {
      using T = decltype(tag);
      if constexpr (sem::is_half_type<T>) {
        return static_cast<double>(T(static_cast<float>(max_abs) / static_cast<float>(min_abs)));
      } else if constexpr (sem::is_fp<T>) {
        return static_cast<double>(static_cast<T>(max_abs) / static_cast<T>(min_abs));
      } else {
        return max_abs / min_abs;
      }
    });
    exp_ = max_abs >= 1e8 || (!suppress && (min_abs < 1e-4 || ratio > 1e3));
  }

  DType t_;
  int precision_;
  int min_digits_ = 0;
  bool exp_ = false;
  int pad_left_ = 0;
  int pad_right_ = 0;
  int exp_digits_ = 0;
};

// ---- layout: NumPy's _formatArray ---------------------------------------------------------

class Layout {
 public:
  Layout(const Shape& shape, const PrintOptions& o, bool summarize, std::string separator)
      : shape_(shape), edge_(o.edgeitems), summarize_(summarize), separator_(std::move(separator)) {
    const auto nd = static_cast<std::size_t>(shape.ndim());
    corner_.assign(nd, 0);
    strides_.assign(nd, 1);
    for (int d = shape.ndim() - 1; d >= 0; --d) {
      const auto du = static_cast<std::size_t>(d);
      corner_[du] = cut(d) ? 2 * static_cast<std::int64_t>(edge_) : shape[d];
      if (du + 1 < nd) strides_[du] = strides_[du + 1] * corner_[du + 1];
    }
  }

  // The values printing shows, row-major over the corner of the array that
  // keeps the leading and trailing items of each elided axis (NumPy's
  // _leading_trailing): they alone fix the format. The rest is never copied, so
  // a summarized 10^8-element array prints at once.
  template <class T>
  std::vector<T> read(const Array& a, const Loc& loc) const {
    std::vector<int> cut_axes;
    for (int d = 0; d < shape_.ndim(); ++d)
      if (cut(d)) cut_axes.push_back(d);
    if (cut_axes.empty()) return a.to_vector<T>(loc);
    a.eval(loc);  // then every corner block is a view of its storage
    const Array host = a.device().host_addressable() ? a : a.to(Device::cpu(), loc);
    std::int64_t total = 1;
    for (auto n : corner_) total *= n;
    std::vector<T> out(static_cast<std::size_t>(total));
    for (unsigned mask = 0; mask < (1u << cut_axes.size()); ++mask) {  // each block: leading
      Array block = host;                                                // or trailing per axis
      std::int64_t base = 0;
      for (std::size_t k = 0; k < cut_axes.size(); ++k) {
        const int d = cut_axes[k];
        const bool trailing = (mask >> k) & 1u;
        const std::int64_t start = trailing ? shape_[d] - edge_ : 0;
        block = slice(block, d, start, start + edge_, 1, loc);
        if (trailing) base += edge_ * strides_[static_cast<std::size_t>(d)];
      }
      scatter(block.to_vector<T>(loc), block.shape(), base, out);
    }
    return out;
  }

  // Text of the array whose corner elements `cell` writes, for a first line
  // that starts after `prefix` and lines of `width` characters.
  template <class Cell>
  std::string text(const Cell& cell, std::size_t prefix, int width) const {
    return recurse(cell, 0, 0, std::string(prefix + 1, ' '), width);
  }

 private:
  // Whether axis `axis` shows "..." between its leading and trailing items.
  bool elided(int axis) const {
    return summarize_ && 2 * static_cast<std::int64_t>(edge_) < shape_[axis];
  }
  // Whether the corner drops the middle of the axis. (With edgeitems=0 NumPy
  // formats by the whole axis, its a[-0:], yet shows only the last item.)
  bool cut(int axis) const { return elided(axis) && edge_ > 0; }

  // Offset in the corner of item `i` of the full axis `axis`.
  std::int64_t offset(int axis, std::int64_t i) const {
    const std::int64_t n = shape_[axis];
    if (cut(axis) && i >= n - edge_) i -= n - 2 * static_cast<std::int64_t>(edge_);
    return i * strides_[static_cast<std::size_t>(axis)];
  }

  // Writes a row-major block of shape `block` into the corner from `base` on.
  template <class T>
  void scatter(const std::vector<T>& values, const Shape& block, std::int64_t base,
               std::vector<T>& out) const {
    std::vector<std::int64_t> idx(static_cast<std::size_t>(block.ndim()), 0);
    std::int64_t at = base;
    for (const T& v : values) {
      out[static_cast<std::size_t>(at)] = v;
      for (int d = block.ndim() - 1; d >= 0; --d) {
        const auto du = static_cast<std::size_t>(d);
        at += strides_[du];
        if (++idx[du] < block[d]) break;
        at -= strides_[du] * block[d];
        idx[du] = 0;
      }
    }
  }

  static std::string rstrip(std::string s) {
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s;
  }

  // NumPy's _extendLine: start a new line when the word would pass the width,
  // unless the line holds nothing but its indent.
  static void extend(std::string& s, std::string& line, const std::string& word, int width,
                     const std::string& indent) {
    if (line.size() + word.size() > static_cast<std::size_t>(std::max(width, 0)) &&
        line.size() > indent.size()) {
      s += rstrip(line) + "\n";
      line = indent;
    }
    line += word;
  }

  template <class Cell>
  std::string recurse(const Cell& cell, int axis, std::int64_t flat, const std::string& indent,
                      int width) const {
    const int left = shape_.ndim() - axis;
    if (left == 0) return cell(flat);
    const std::int64_t n = shape_[axis];
    const bool elide = elided(axis);
    const std::int64_t leading = elide ? edge_ : 0, trailing = elide ? edge_ : n;
    // Items of the next axis indent one more and lose a column to the "]".
    auto item = [&](std::int64_t i) {
      return recurse(cell, axis + 1, flat + offset(axis, i), indent + " ", width - 1);
    };
    const std::string sep_end = rstrip(separator_);
    std::string s;
    if (left == 1) {
      const int elem_width = width - static_cast<int>(std::max<std::size_t>(sep_end.size(), 1));
      std::string line = indent;
      for (std::int64_t i = 0; i < leading; ++i) {
        extend(s, line, item(i), elem_width, indent);
        line += separator_;
      }
      if (elide) {
        extend(s, line, "...", elem_width, indent);
        line += separator_;
      }
      for (std::int64_t i = n - trailing; i < n - 1; ++i) {
        extend(s, line, item(i), elem_width, indent);
        line += separator_;
      }
      extend(s, line, item(n - 1), elem_width, indent);
      s += line;
    } else {
      const std::string line_sep = sep_end + std::string(static_cast<std::size_t>(left - 1), '\n');
      for (std::int64_t i = 0; i < leading; ++i) s += indent + item(i) + line_sep;
      if (elide) s += indent + "..." + line_sep;
      for (std::int64_t i = n - trailing; i < n - 1; ++i) s += indent + item(i) + line_sep;
      s += indent + item(n - 1);
    }
    return "[" + s.substr(indent.size()) + "]";
  }

  Shape shape_;  // a copy: reading the values may replace the array's node
  std::vector<std::int64_t> corner_;   // extents of the corner read
  std::vector<std::int64_t> strides_;  // row-major strides of the corner
  int edge_;
  bool summarize_;
  std::string separator_;
};

// NumPy's array2string: the values of `a` with `separator` between items, laid
// out for a first line that starts after `prefix` characters.
std::string format_values(const Array& a, const std::string& separator, std::size_t prefix,
                          int linewidth, const PrintOptions& o, const Loc& loc) {
  if (a.size() == 0) return "[]";
  const DType t = a.dtype();
  const Layout layout(a.shape(), o, a.size() > o.threshold, separator);
  if (t == DType::bf16) {
    const std::vector<double> v = layout.read<double>(a, loc);  // widens exactly
    auto cell = [&](std::int64_t i) {
      const float f = static_cast<float>(v[static_cast<std::size_t>(i)]);
      std::ostringstream os;
      os << (std::isnan(f) ? std::fabs(f) : f);  // ml_dtypes prints nan, never -nan
      return os.str();
    };
    return layout.text(cell, prefix, linewidth);
  }
  if (is_float(t)) {
    const std::vector<double> v = layout.read<double>(a, loc);  // f32, f16 widen exactly
    const FloatFormat format(v, t, o);
    auto cell = [&](std::int64_t i) { return format(v[static_cast<std::size_t>(i)]); };
    return layout.text(cell, prefix, linewidth);
  }
  // i64 values beyond 2^53 would round through double: read integers exactly.
  const std::vector<std::int64_t> v = layout.read<std::int64_t>(a, loc);
  auto at = [&](std::int64_t i) { return v[static_cast<std::size_t>(i)]; };
  if (t == DType::bool_) {
    const std::string true_text = a.ndim() == 0 ? "True" : " True";  // as wide as "False"
    auto cell = [&](std::int64_t i) { return at(i) ? true_text : "False"; };
    return layout.text(cell, prefix, linewidth);
  }
  // A u64 read as int64 holds its bits: printed unsigned.
  const bool u64 = dtype_kind(t) == DTypeKind::Unsigned && itemsize(t) == 8;
  auto text = [&](std::int64_t x) { return u64 ? std::to_string(static_cast<std::uint64_t>(x)) : std::to_string(x); };
  std::size_t width = 0;
  for (auto x : v) width = std::max(width, text(x).size());
  auto cell = [&](std::int64_t i) {
    std::string c = text(at(i));
    return std::string(width - c.size(), ' ') + c;
  };
  return layout.text(cell, prefix, linewidth);
}

}  // namespace

void set_printoptions(const PrintOptions& options, Loc loc) {
  check_options(options, "set_printoptions", loc);
  std::lock_guard<std::mutex> lock(options_mutex);
  current_options = options;
}

PrintOptions printoptions() {
  std::lock_guard<std::mutex> lock(options_mutex);
  return current_options;
}

ScopedPrintOptions::ScopedPrintOptions(const PrintOptions& options, Loc loc)
    : saved_(printoptions()) {
  check_options(options, "ScopedPrintOptions", loc);
  set_printoptions(options, loc);
}

ScopedPrintOptions::~ScopedPrintOptions() { set_printoptions(saved_); }

std::string array2string(const Array& a, Loc loc) {
  if (!a.valid())
    user_error("array2string", "empty Array handle (default-constructed or moved-from)", loc);
  const PrintOptions o = printoptions();
  return format_values(a, " ", 0, o.linewidth, o, loc);
}

namespace {
// NumPy's repr: `text` (the prefix, the values and their ","), then the
// trailer after a space, or on a line of its own, indented as the prefix,
// when the last line would pass the line width.
std::string with_trailer(const std::string& text, const std::string& trailer, std::size_t prefix, int linewidth) {
  const std::size_t last_line = text.size() - (text.rfind('\n') + 1);  // npos + 1 == 0
  const bool own_line = last_line + trailer.size() + 1 > static_cast<std::size_t>(linewidth);
  return text + (own_line ? "\n" + std::string(prefix, ' ') : " ") + trailer;
}
}  // namespace

std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }
std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }

std::ostream& operator<<(std::ostream& os, const Array& a) {
  if (!a.valid()) return os << "array(<empty handle>)";
  const PrintOptions o = printoptions();
  const std::string prefix = "array(";
  // As NumPy's repr: the "," after the values costs the last line one column.
  const std::string text =
      prefix + format_values(a, ", ", prefix.size(), o.linewidth - 1, o, Loc::current()) + ",";
  std::string trailer = "dtype=" + std::string(dtype_name(a.dtype())) + ", shape=" + a.shape().str();
  if (!a.device().is_host()) trailer += ", device=" + a.device().str();
  trailer += ")";
  return os << with_trailer(text, trailer, prefix.size(), o.linewidth);
}

std::string numpy_dtype_name(DType t) {
  const DTypeInfo& info = kDTypeInfo[static_cast<int>(t)];
  const std::string bits = std::to_string(info.itemsize * 8);
  switch (info.kind) {
    case DTypeKind::Bool: return "bool";
    case DTypeKind::Unsigned: return "uint" + bits;
    case DTypeKind::Signed: return "int" + bits;
    case DTypeKind::Float: return t == DType::bf16 ? "bfloat16" : "float" + bits;  // ml_dtypes' name
  }
  return info.name;
}

std::string numpy_repr(const Array& a) {
  if (!a.valid()) user_error("numpy_repr", "empty Array handle (default-constructed or moved-from)", Loc::current());
  const PrintOptions o = printoptions();
  const std::string prefix = "array(";
  const DType t = a.dtype();
  // NumPy 1.24's _array_repr_implementation: the dtype is implied for
  // float64, int64 and bool unless the array is empty; an empty array shows
  // its shape unless it is (0,).
  const bool skip_dtype = (t == DType::f64 || t == DType::i64 || t == DType::bool_) && a.size() > 0;
  std::string text = prefix;
  if (a.size() > 0 || a.ndim() == 1) {
    text += format_values(a, ", ", prefix.size(), o.linewidth - 1, o, Loc::current());
  } else {  // rank >= 2 with no elements
    std::string shape;
    for (int i = 0; i < a.ndim(); ++i) shape += (i ? ", " : "") + std::to_string(a.shape()[i]);
    text += "[], shape=(" + shape + ")";
  }
  if (skip_dtype) return text + ")";
  return with_trailer(text + ",", "dtype=" + numpy_dtype_name(t) + ")", prefix.size(), o.linewidth);
}

const char* version() { return "0.1.0"; }

}  // namespace aj
