#include "backends/cpu/host_sort.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "arrayjit/error.hpp"
#include "backends/cpu/host_memory.hpp"
#include "backends/cpu/host_sort_network.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "base/semantics.hpp"

namespace aj::cpu {

namespace {

// The unsigned key whose integer order is the sort order (see the header).
template <class T>
auto sort_key(T x) {
  if constexpr (std::is_same_v<T, bool>) {
    return static_cast<std::uint8_t>(x);
  } else if constexpr (sem::is_unsigned_int<T>) {
    return x;  // already in order
  } else if constexpr (sem::is_signed_int<T>) {
    // Two's complement with the sign bit flipped: the most negative first.
    using K = std::make_unsigned_t<T>;
    return static_cast<K>(static_cast<K>(x) ^ (K(1) << (sizeof(K) * 8 - 1)));
  } else {
    // Integer operations and selects only, so the key loop vectorizes:
    // negative values flip every bit, others only the sign; -0.0 takes
    // +0.0's key; every NaN (magnitude above inf's bits) the largest.
    using K = std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                 std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>;
    static_assert(sizeof(K) == sizeof(T), "a float type of 2, 4 or 8 bytes");
    using S = std::make_signed_t<K>;
    constexpr K sign = K(1) << (sizeof(K) * 8 - 1);
    constexpr K inf = [] {  // +inf's bits (the half types have no numeric_limits)
      if constexpr (std::is_same_v<T, f16>) return K(0x7c00);
      else if constexpr (std::is_same_v<T, bf16>) return K(0x7f80);
      else return std::bit_cast<K>(std::numeric_limits<T>::infinity());
    }();
    const K u = std::bit_cast<K>(x);
    const K magnitude = u & ~sign;
    const K flipped = u ^ (static_cast<K>(static_cast<S>(u) >> (sizeof(K) * 8 - 1)) | sign);
    const K k = magnitude == 0 ? sign : flipped;
    return magnitude > inf ? std::numeric_limits<K>::max() : k;
  }
}

// Lines up to kShortLine long take an insertion sort, up to kRadixLine a
// comparison sort (a radix pass costs its 256 buckets however short the
// line), longer ones the radix sort. Measured on 1M f32 in lines of 32 to
// 1024: the comparison sort wins up to 64-128, the radix sort from 256 on
// (2.6x std::sort per line there).
constexpr std::int64_t kShortLine = 24;
constexpr std::int64_t kRadixLine = 128;
// Where the CPU has a sorting network (host_sort_network.hpp: AVX-512),
// lines longer than kShortLine take it: up to kNetworkLine elements sorted
// as they are, up to kNetworkPositionsLine as (key, position) words (twice
// the bytes). Measured on Zen 4, 16M f32 in lines of 1,024 to 65,536 (ns
// an element, network against radix): values 3.4-7.2 against 10.5 from
// 8,192 on; positions 9.7 against 20.8 at 8,192, 10.9 against 10.1 at 16,384.
constexpr std::int64_t kNetworkLine = 65536;
constexpr std::int64_t kNetworkPositionsLine = 8192;
// topk with k <= kSelectK keeps the best k in one pass over the line (a
// sorted buffer a new element rarely enters); up to n / kPartialRatio it
// selects by partial sort (O(n log k)); beyond, the full radix sort.
constexpr std::int64_t kSelectK = 64;
constexpr std::int64_t kPartialRatio = 16;

// One line's (key, position) pairs and the buffers a radix pass moves them
// to, carved from one block of the host allocator's cache: a sort called in
// a loop reuses its scratch instead of faulting fresh pages in each time
// (which was 90% of a topk(10) of 1M floats). The second half (key2, pos2)
// also holds n packed 64-bit (key, position) words for short lines.
template <class K, class P>
struct Line {
  std::shared_ptr<Storage> block;
  K *key = nullptr, *key2 = nullptr;
  P *pos = nullptr, *pos2 = nullptr;
  std::uint64_t* packed = nullptr;
  explicit Line(std::size_t n) {
    auto round8 = [](std::size_t b) { return (b + 7) / 8 * 8; };
    const std::size_t a = round8(n * sizeof(K)), half = a + round8(n * sizeof(P));
    // The network's words (padded to a power of two) live in `packed` too.
    const bool network = network_lanes(8) != 0 && n <= static_cast<std::size_t>(kNetworkLine);
    const std::size_t words = network ? network_size(n, 8) : n;
    const std::size_t second = std::max(half, 8 * std::max(n, words));
    block = host_alloc(static_cast<std::int64_t>(half + second), 1);
    char* at = static_cast<char*>(block->data);
    key = reinterpret_cast<K*>(at);
    pos = reinterpret_cast<P*>(at + a);
    key2 = reinterpret_cast<K*>(at + half);
    pos2 = reinterpret_cast<P*>(at + half + a);
    packed = reinterpret_cast<std::uint64_t*>(at + half);
  }
};

// Stable ascending sort of the first n pairs by key.
template <class K, class P>
void sort_pairs(Line<K, P>& l, std::size_t n) {
  if (static_cast<std::int64_t>(n) <= kShortLine) {
    for (std::size_t i = 1; i < n; ++i) {
      const K k = l.key[i];
      const P p = l.pos[i];
      std::size_t j = i;
      for (; j > 0 && l.key[j - 1] > k; --j) {
        l.key[j] = l.key[j - 1];
        l.pos[j] = l.pos[j - 1];
      }
      l.key[j] = k;
      l.pos[j] = p;
    }
    return;
  }
  if (static_cast<std::int64_t>(n) <= kRadixLine) {
    // (key, position) is a total order, the same as the stable one.
    if constexpr (sizeof(K) <= 4 && sizeof(P) == 4) {
      // Packed into one word each: a plain integer sort.
      for (std::size_t i = 0; i < n; ++i) l.packed[i] = std::uint64_t{l.key[i]} << 32 | l.pos[i];
      std::sort(l.packed, l.packed + n);
      for (std::size_t i = 0; i < n; ++i) l.pos[i] = static_cast<P>(l.packed[i]);
    } else {
      // Positions start in order (key[i] belongs to pos[i] == i): compare keys by position.
      std::sort(l.pos, l.pos + n, [&](P a, P b) { return l.key[a] < l.key[b] || (l.key[a] == l.key[b] && a < b); });
    }
    return;
  }
  // LSD radix sort, one byte per pass; a pass where every key has the same
  // byte moves nothing and is skipped.
  constexpr int kBytes = sizeof(K);
  std::size_t count[kBytes][256] = {};
  for (std::size_t i = 0; i < n; ++i) {
    const K k = l.key[i];
    for (int d = 0; d < kBytes; ++d) ++count[d][(k >> (8 * d)) & 0xff];
  }
  for (int d = 0; d < kBytes; ++d) {
    const int shift = 8 * d;
    if (count[d][(l.key[0] >> shift) & 0xff] == n) continue;
    std::size_t at[256];
    std::size_t sum = 0;
    for (int b = 0; b < 256; ++b) {
      at[b] = sum;
      sum += count[d][b];
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t j = at[(l.key[i] >> shift) & 0xff]++;
      l.key2[j] = l.key[i];
      l.pos2[j] = l.pos[i];
    }
    std::swap(l.key, l.key2);
    std::swap(l.pos, l.pos2);
  }
}

template <class T, class P>
class LineSorter {
 public:
  using K = decltype(sort_key(T{}));

  LineSorter(const LibraryCall& c, const T* x, void* out) : c_(c), x_(x), out_(out) {
    const LibraryOperand& src = c.inputs[0];
    axis_ = static_cast<std::size_t>(c.axis);
    n_ = src.shape[axis_];
    stride_ = src.strides[axis_];
    keep_ = c.shape[axis_];
    top_ = c.op == Op::TopK || c.op == Op::ArgTopK;
    indices_ = c.op == Op::ArgSort || c.op == Op::ArgTopK;
    // Result strides (contiguous), and the other axes that number the lines.
    std::vector<std::int64_t> out_strides(c.shape.size());
    for (std::size_t d = c.shape.size(), acc = 1; d-- > 0;) {
      out_strides[d] = static_cast<std::int64_t>(acc);
      acc *= static_cast<std::size_t>(c.shape[d]);
    }
    out_stride_ = out_strides[axis_];
    for (std::size_t d = 0; d < c.shape.size(); ++d) {
      if (d == axis_) continue;
      ext_.push_back(src.shape[d]);
      in_str_.push_back(src.strides[d]);
      out_str_.push_back(out_strides[d]);
    }
  }

  std::int64_t lines() const {
    std::int64_t l = 1;
    for (auto e : ext_) l *= e;
    return l;
  }

  void run(std::int64_t lo, std::int64_t hi) const {
    Line<K, P> line(static_cast<std::size_t>(n_));
    // The line's index along the other axes, counted up line by line (an
    // odometer: no division per line), and its offsets.
    std::vector<std::int64_t> at(ext_.size());
    std::int64_t in_off = c_.inputs[0].offset, out_off = 0;
    for (std::size_t a = ext_.size(), rest = static_cast<std::size_t>(lo); a-- > 0;) {
      at[a] = static_cast<std::int64_t>(rest % static_cast<std::size_t>(ext_[a]));
      rest /= static_cast<std::size_t>(ext_[a]);
      in_off += at[a] * in_str_[a];
      out_off += at[a] * out_str_[a];
    }
    for (std::int64_t l = lo; l < hi; ++l, next_line(at, in_off, out_off)) {
      if (sort_line(line, x_ + in_off)) {
        // The network left the line's values in ascending order.
        const T* w = reinterpret_cast<const T*>(line.packed);
        T* o = static_cast<T*>(out_) + out_off;
        if (top_) {
          for (std::int64_t i = 0; i < keep_; ++i) o[i * out_stride_] = w[n_ - 1 - i];
        } else if (out_stride_ == 1) {
          std::copy(w, w + keep_, o);
        } else {
          for (std::int64_t i = 0; i < keep_; ++i) o[i * out_stride_] = w[i];
        }
        continue;
      }
      for (std::int64_t i = 0; i < keep_; ++i) {
        const auto p = static_cast<std::int64_t>(line.pos[static_cast<std::size_t>(i)]);
        const std::int64_t at = out_off + i * out_stride_;
        if (indices_) static_cast<std::int64_t*>(out_)[at] = p;
        else static_cast<T*>(out_)[at] = x_[in_off + p * stride_];
      }
    }
  }

 private:
  // Steps the odometer `at` to the next line, its offsets with it.
  void next_line(std::vector<std::int64_t>& at, std::int64_t& in_off, std::int64_t& out_off) const {
    for (std::size_t a = ext_.size(); a-- > 0;) {
      in_off += in_str_[a];
      out_off += out_str_[a];
      if (++at[a] < ext_[a]) return;
      in_off -= at[a] * in_str_[a];
      out_off -= at[a] * out_str_[a];
      at[a] = 0;
    }
  }

  // The best keep_ pairs of the line, best first (larger key; on equal keys
  // the lower position, which came first), kept in line.key / line.pos
  // [0, keep_): an element enters only when it beats the last of them.
  void select_top(Line<K, P>& line, const T* x) const {
    if (keep_ == 0) return;
    std::int64_t count = 0;
    for (std::int64_t i = 0; i < n_; ++i) {
      const K k = sort_key(x[i * stride_]);
      if (count == keep_ && !(k > line.key[count - 1])) continue;
      std::int64_t j = count < keep_ ? count++ : keep_ - 1;  // the slot it may take
      for (; j > 0 && k > line.key[j - 1]; --j) {
        line.key[j] = line.key[j - 1];
        line.pos[j] = line.pos[j - 1];
      }
      line.key[j] = k;
      line.pos[j] = static_cast<P>(i);
    }
  }

  // The sorting network (host_sort_network.hpp) takes lines longer than
  // kShortLine up to kNetworkLine where the CPU has one, in one of two ways.
  bool network_takes() const {
    return n_ > kShortLine && n_ <= kNetworkLine && network_lanes(8) != 0;
  }

  // The values as they are, 4 or 8 bytes, where no position is asked for
  // and equal values are equal bits (no NaN, no -0.0: network_load checks):
  // false where the line is not so. The line sorted ascending is left in line.packed, read as T.
  bool network_values(Line<K, P>& line, const T* x) const {
    if constexpr ((sizeof(T) == 4 || sizeof(T) == 8) && !std::is_same_v<T, bool>) {
      const auto n = static_cast<std::size_t>(n_);
      if (indices_) return false;
      auto* w = reinterpret_cast<T*>(line.packed);
      const std::size_t size = network_size(n, sizeof(T));
      if (!network_load(x, stride_, n, w, size)) return false;
      network_sort(w, size);
      return true;
    } else {
      return false;
    }
  }

  // (key, position) words, whose order is the stable order, for keys of up
  // to 4 bytes: false for wider keys (the radix sort takes those).
  bool network_positions(Line<K, P>& line, const T* x) const {
    if constexpr (sizeof(K) <= 4 && sizeof(P) == 4) {
      if (n_ > kNetworkPositionsLine) return false;
      const auto n = static_cast<std::size_t>(n_);
      const auto flip = static_cast<K>(top_ ? std::numeric_limits<K>::max() : K(0));
      std::uint64_t* w = line.packed;
      for (std::size_t i = 0; i < n; ++i) {
        const K k = static_cast<K>(sort_key(x[static_cast<std::int64_t>(i) * stride_]) ^ flip);
        w[i] = std::uint64_t{k} << 32 | i;
      }
      const std::size_t size = network_size(n, 8);
      std::fill(w + n, w + size, ~std::uint64_t{0});
      network_sort(w, size);
      for (std::size_t i = 0; i < n; ++i) line.pos[i] = static_cast<P>(w[i]);
      return true;
    } else {
      return false;
    }
  }

  // Leaves the line's order (positions along the axis) in line.pos[0, keep),
  // or returns true when the network left the sorted values in line.packed.
  bool sort_line(Line<K, P>& line, const T* x) const {
    const auto n = static_cast<std::size_t>(n_);
    if (top_ && keep_ <= kSelectK && keep_ * kPartialRatio <= n_) {
      select_top(line, x);
      return false;
    }
    if (network_takes() && !(top_ && keep_ * kPartialRatio <= n_)) {
      if (network_values(line, x)) return true;
      if (network_positions(line, x)) return false;
    }
    if (stride_ == 1) {  // the usual case, vectorized
      for (std::size_t i = 0; i < n; ++i) line.key[i] = sort_key(x[i]);
    } else {
      for (std::size_t i = 0; i < n; ++i) line.key[i] = sort_key(x[static_cast<std::int64_t>(i) * stride_]);
    }
    for (std::size_t i = 0; i < n; ++i) line.pos[i] = static_cast<P>(i);
    if (top_ && keep_ * kPartialRatio <= n_) {
      // Positions by descending key, ties by lower position: a total order,
      // so the partial sort's result is the full sort's prefix.
      auto before = [&](P a, P b) { return line.key[a] > line.key[b] || (line.key[a] == line.key[b] && a < b); };
      std::partial_sort(line.pos, line.pos + keep_, line.pos + n, before);
      return false;
    }
    if (top_) {
      for (std::size_t i = 0; i < n; ++i) line.key[i] = static_cast<K>(~line.key[i]);  // descending, still stable
    }
    sort_pairs(line, n);
    return false;
  }

  const LibraryCall& c_;
  const T* x_;
  void* out_;
  std::size_t axis_ = 0;
  std::int64_t n_ = 0, stride_ = 0, keep_ = 0, out_stride_ = 0;
  bool top_ = false, indices_ = false;
  std::vector<std::int64_t> ext_, in_str_, out_str_;
};

template <class T, class P>
void sort_all(const LibraryCall& c, const T* x, void* out, int threads) {
  LineSorter<T, P> sorter(c, x, out);
  const std::int64_t lines = sorter.lines();
  const std::int64_t n = c.inputs[0].shape[static_cast<std::size_t>(c.axis)];
  if (lines == 0 || n == 0 || c.shape[static_cast<std::size_t>(c.axis)] == 0) return;
  // Split the lines when there is enough work for more than one thread.
  const bool parallel = threads > 1 && lines > 1 && lines * n >= (std::int64_t{1} << 15);
  if (!parallel) return sorter.run(0, lines);
  parallel_chunks([](const void* ctx, std::int64_t lo, std::int64_t hi) {
    static_cast<const LineSorter<T, P>*>(ctx)->run(lo, hi);
  }, &sorter, lines, std::min<std::int64_t>(lines, static_cast<std::int64_t>(threads) * 4), threads);
}

}  // namespace

void sort_lines(const LibraryCall& c, const void* in, void* out, int threads) {
  if (c.op != Op::Sort && c.op != Op::ArgSort && c.op != Op::TopK && c.op != Op::ArgTopK) {
    internal_error(std::string("host sort: not a sort: ") + op_name(c.op));
  }
  const std::int64_t n = c.inputs[0].shape.at(static_cast<std::size_t>(c.axis));
  sem::visit_dtype(c.inputs[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    if (n <= std::numeric_limits<std::uint32_t>::max()) {
      sort_all<T, std::uint32_t>(c, static_cast<const T*>(in), out, threads);
    } else {
      sort_all<T, std::uint64_t>(c, static_cast<const T*>(in), out, threads);
    }
  });
}

}  // namespace aj::cpu
