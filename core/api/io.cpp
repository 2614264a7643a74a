// .npy, .npz and safetensors (see arrayjit/io.hpp).
//
// Reading: the file is mapped (Bytes: a range of the mapping and what keeps
// it alive) and every array borrows its range (array_from), unless its data
// must be converted; every offset read from a file is checked against the
// range it indexes before it is used. Writing: Out writes a temporary beside
// the path and renames it into place; arrays are written from their
// evaluated buffers (HostData).
#include "arrayjit/io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <sstream>

#include "arrayjit/error.hpp"
#include "base/semantics.hpp"
#include "core/api/foreign_storage.hpp"

namespace aj {

namespace {

std::atomic<std::uint64_t> g_zip64_limit{0xffffffffu};

std::string quoted(const std::string& path) { return "'" + path + "'"; }

// ---- bytes in: a mapped file ------------------------------------------------------------

struct Mapping {
  void* base = nullptr;
  std::size_t size = 0;
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (base) ::munmap(base, size);
  }
};

// A range of bytes and what keeps it alive (the file's mapping, or an
// inflated copy). Every read is bounds-checked by its caller.
struct Bytes {
  const char* p = nullptr;
  std::size_t n = 0;
  std::shared_ptr<const void> keep;

  std::uint64_t le(std::size_t at, int bytes) const {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[at + static_cast<std::size_t>(i)])) << (8 * i);
    return v;
  }
  std::string str(std::size_t at, std::size_t len) const { return std::string(p + at, len); }
  Bytes sub(std::size_t at, std::size_t len) const { return {p + at, len, keep}; }
  bool starts_with(const char* s, std::size_t len) const { return n >= len && std::memcmp(p, s, len) == 0; }
};

Bytes map_file(const char* op, const std::string& path, const Loc& loc) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT) user_error(op, quoted(path) + " is not a file that exists", loc);
    user_error(op, "cannot open " + quoted(path) + " for reading: " + std::strerror(e), loc);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    user_error(op, quoted(path) + " is not a regular file", loc);
  }
  auto m = std::make_shared<Mapping>();
  m->size = static_cast<std::size_t>(st.st_size);
  if (m->size > 0) {
    void* p = ::mmap(nullptr, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      runtime_error("aj::" + std::string(op) + ": cannot map " + quoted(path) + ": " + std::strerror(e) + " (at " +
                    loc_str(loc) + ")");
    }
    m->base = p;
  }
  ::close(fd);
  return Bytes{static_cast<const char*>(m->base), m->size, m};
}

std::int64_t checked_count(const char* op, const std::vector<std::int64_t>& shape, std::size_t item,
                           const std::string& what, const Loc& loc) {
  std::int64_t n = 1;
  const auto cap = std::numeric_limits<std::int64_t>::max() / 2;  // bytes, with room for offsets
  for (std::int64_t e : shape) {
    if (e < 0) user_error(op, what + ": a negative extent in its shape", loc);
    if (e != 0 && n > cap / static_cast<std::int64_t>(item) / e) user_error(op, what + ": its shape's byte size overflows", loc);
    n *= e;
  }
  return n;
}

std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> s(dims.size());
  std::int64_t k = 1;
  for (std::size_t d = dims.size(); d-- > 0;) {
    s[d] = k;
    k *= std::max<std::int64_t>(dims[d], 1);
  }
  return s;
}

// A copy of `n` elements of dtype `t` at `p` (little-endian, or big-endian
// with `swap`), row-major in `shape`.
Array copied(DType t, const Shape& shape, const char* p, bool swap, const Loc& loc) {
  const std::size_t n = static_cast<std::size_t>(shape.numel());
  auto typed = [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> v(n);
    if (n) std::memcpy(static_cast<void*>(v.data()), p, n * sizeof(T));
    if (swap && sizeof(T) > 1) {
      for (auto& x : v) {
        auto* b = reinterpret_cast<unsigned char*>(&x);
        std::reverse(b, b + sizeof(T));
      }
    }
    return from_vector<T>(v, shape, loc);
  };
  if (t == DType::bool_) {  // (any nonzero byte is true)
    std::vector<std::int32_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = p[i] != 0;
    return from_vector<std::int32_t>(v, shape, loc).astype(DType::bool_, loc).eval(loc);
  }
  return sem::visit_dtype(t, [&](auto zero) -> Array {
    if constexpr (std::is_same_v<decltype(zero), bool>) internal_error("io: bool is read above");
    else return typed(zero);
  });
}

// The array of `dims` (row-major, or column-major with `fortran`) whose
// elements start at `b.p` (b.n covers them): borrowed from b when it can be,
// a copy otherwise (io.hpp says when).
Array array_from(const char* op, DType t, const std::vector<std::int64_t>& dims, bool fortran, const Bytes& b, bool swap,
                 const Loc& loc) {
  const Shape shape(dims);
  const std::size_t item = itemsize(t), n = static_cast<std::size_t>(shape.numel());
  bool borrow = n > 0 && !(swap && item > 1) && reinterpret_cast<std::uintptr_t>(b.p) % item == 0;
  if (borrow && t == DType::bool_) {
    borrow = std::all_of(b.p, b.p + n, [](char c) { return c == 0 || c == 1; });
  }
  if (borrow) {
    std::vector<std::int64_t> strides;
    if (!fortran) {
      strides = row_major_strides(dims);
    } else {
      std::vector<std::int64_t> rev(dims.rbegin(), dims.rend());
      strides = row_major_strides(rev);
      std::reverse(strides.begin(), strides.end());
    }
    return detail::import_borrowed(const_cast<char*>(b.p), t, shape, std::move(strides),
                                   [keep = b.keep]() mutable { keep.reset(); }, op, loc);
  }
  if (!fortran) return copied(t, shape, b.p, swap, loc);
  // Column-major: the reversed shape row-major, transposed back.
  std::vector<std::int64_t> rev(dims.rbegin(), dims.rend());
  std::vector<int> perm;
  for (int d = static_cast<int>(dims.size()); d-- > 0;) perm.push_back(d);
  return copied(t, Shape(rev), b.p, swap, loc).transpose(perm, loc);
}

// ---- bytes out -----------------------------------------------------------------------------

// A file written to a temporary beside `path` and renamed into place by
// commit(): a failure (or an exception before commit) leaves no file.
class Out {
 public:
  Out(const char* op, std::string path, const Loc& loc) : op_(op), path_(std::move(path)), tmp_(path_ + ".aj-tmp"), loc_(loc) {
    f_ = std::fopen(tmp_.c_str(), "wb");
    if (!f_) user_error(op_, "cannot open " + quoted(path_) + " for writing: " + std::strerror(errno), loc_);
  }
  Out(const Out&) = delete;
  Out& operator=(const Out&) = delete;
  ~Out() {
    if (f_) {
      std::fclose(f_);
      std::remove(tmp_.c_str());
    }
  }
  void write(const void* p, std::size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) fail();
    at_ += n;
  }
  void write(const std::string& s) { write(s.data(), s.size()); }
  std::uint64_t tell() const { return at_; }
  // Overwrite bytes already written at `pos` (then carry on at the end).
  void patch(std::uint64_t pos, const std::string& s) {
    if (::fseeko(f_, static_cast<off_t>(pos), SEEK_SET) != 0) fail();
    if (std::fwrite(s.data(), 1, s.size(), f_) != s.size()) fail();
    if (::fseeko(f_, 0, SEEK_END) != 0) fail();
  }
  void commit() {
    FILE* f = f_;
    f_ = nullptr;
    const bool ok = std::fflush(f) == 0;
    const int e = errno;
    const bool closed = std::fclose(f) == 0;
    if (!ok || !closed) {
      std::remove(tmp_.c_str());
      runtime_error("aj::" + std::string(op_) + ": writing " + quoted(path_) + " failed: " + std::strerror(e) + " (at " + loc_str(loc_) + ")");
    }
    // The old file is unlinked first: ext4 (auto_da_alloc) writes a file
    // renamed over another back to disk before the rename returns, which
    // made saving 3x slower than NumPy's; arrays still mapping the old file
    // keep it. (Nothing is fsync'ed, as NumPy does not.)
    ::unlink(path_.c_str());
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
      const int re = errno;
      std::remove(tmp_.c_str());
      user_error(op_, "cannot write " + quoted(path_) + ": " + std::strerror(re), loc_);
    }
  }

 private:
  [[noreturn]] void fail() {
    const int e = errno;
    std::fclose(f_);
    f_ = nullptr;
    std::remove(tmp_.c_str());
    runtime_error("aj::" + std::string(op_) + ": writing " + quoted(path_) + " failed: " + std::strerror(e) + " (at " + loc_str(loc_) + ")");
  }
  const char* op_;
  std::string path_, tmp_;
  const Loc& loc_;
  FILE* f_ = nullptr;
  std::uint64_t at_ = 0;
};

template <class T>
void put_le(std::string& s, T v, int bytes) {
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xff));
}

// An evaluated array's elements on the host, as a file stores them: its own
// buffer when row-major (or column-major where `fortran_ok`), else one
// contiguous copy.
struct HostData {
  const char* p = nullptr;
  std::size_t bytes = 0;
  bool fortran = false;
  std::vector<char> copy;
  Array owner;
};

HostData host_data(const Array& a, bool fortran_ok, const Loc& loc) {
  HostData h;
  h.owner = a.device().host_addressable() ? a : a.to(Device::cpu(), loc);
  const ArrayData d = h.owner.data(loc);
  h.bytes = static_cast<std::size_t>(h.owner.size()) * itemsize(h.owner.dtype());
  if (h.bytes == 0) return h;
  if (d.row_major()) {
    h.p = static_cast<const char*>(d.ptr);
  } else if (fortran_ok && h.owner.ndim() > 1 && d.column_major()) {
    h.p = static_cast<const char*>(d.ptr);
    h.fortran = true;
  } else {
    h.copy.resize(h.bytes);
    h.owner.copy_to(h.copy.data(), {}, loc);
    h.p = h.copy.data();
  }
  return h;
}

// Named arrays to write: each name non-empty, once, not `reserved`; every
// handle valid; then evaluated together (one plan).
void check_and_eval(const char* op, const std::vector<std::pair<std::string, Array>>& arrays, const char* reserved,
                    const Loc& loc) {
  std::set<std::string> seen;
  std::vector<Array> all;
  for (const auto& [name, a] : arrays) {
    if (name.empty() || (reserved && name == reserved)) user_error(op, "the name '" + name + "' cannot be used", loc);
    if (!seen.insert(name).second) user_error(op, "the name '" + name + "' twice", loc);
    if (!a.valid()) user_error(op, "'" + name + "' is an empty Array handle", loc);
    all.push_back(a);
  }
  eval(all, loc);
}

// zlib's 32-bit lengths: big buffers go in pieces.
constexpr std::size_t kZlibPiece = std::size_t{1} << 30;

std::uint32_t crc_update(std::uint32_t crc, const char* p, std::size_t n) {
  uLong c = crc;
  for (std::size_t at = 0; at < n; at += kZlibPiece) {
    const std::size_t k = std::min(kZlibPiece, n - at);
    c = ::crc32(c, reinterpret_cast<const Bytef*>(p + at), static_cast<uInt>(k));
  }
  return static_cast<std::uint32_t>(c);
}

// ---- .npy -----------------------------------------------------------------------------

const char kNpyMagic[] = "\x93NUMPY";

// NumPy's type code of a dtype: its kind's letter and its bytes ("i4", "u1",
// "f2", "b1"); bf16 has none.
std::string npy_code(DType t) {
  if (t == DType::bf16) return "";
  const std::string bytes = std::to_string(itemsize(t));
  switch (dtype_kind(t)) {
    case DTypeKind::Bool: return "b1";
    case DTypeKind::Unsigned: return "u" + bytes;
    case DTypeKind::Signed: return "i" + bytes;
    case DTypeKind::Float: return "f" + bytes;
  }
  return "";
}

std::string npy_descr(const char* op, DType t, const Loc& loc) {
  const std::string code = npy_code(t);
  if (code.empty()) user_error(op, "bf16 has no NumPy type: cast to f32 first, or use save_safetensors", loc);
  return (itemsize(t) == 1 ? "|" : "<") + code;
}

// The magic, version and header dict of a .npy, padded so the data after it
// starts on a 64-byte boundary (as NumPy writes it).
std::string npy_header(const char* op, DType t, const Shape& s, bool fortran, const Loc& loc) {
  std::string shape = "(";
  for (int d = 0; d < s.ndim(); ++d) shape += std::to_string(s[d]) + (s.ndim() == 1 ? "," : d + 1 < s.ndim() ? ", " : "");
  shape += ")";
  std::string dict = "{'descr': '" + npy_descr(op, t, loc) + "', 'fortran_order': " + (fortran ? "True" : "False") +
                     ", 'shape': " + shape + ", }";
  const bool v2 = dict.size() + 1 + 10 > 65535;
  const std::size_t pre = v2 ? 12 : 10;
  const std::size_t total = (pre + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - pre - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string out(kNpyMagic, 6);
  out.push_back(static_cast<char>(v2 ? 2 : 1));
  out.push_back('\0');
  put_le(out, dict.size(), v2 ? 4 : 2);
  return out + dict;
}

// The value after `'key':` in a .npy header dict, as written (up to the next
// top-level comma or brace).
std::string dict_value(const std::string& dict, const std::string& key) {
  for (const char q : {'\'', '"'}) {
    const std::string k = std::string(1, q) + key + q;
    auto at = dict.find(k);
    if (at == std::string::npos) continue;
    at = dict.find(':', at + k.size());
    if (at == std::string::npos) return {};
    ++at;
    while (at < dict.size() && std::isspace(static_cast<unsigned char>(dict[at]))) ++at;
    std::size_t end = at;
    int depth = 0;
    for (; end < dict.size(); ++end) {
      const char c = dict[end];
      if (c == '(' || c == '[') ++depth;
      if (c == ')' || c == ']') --depth;
      if (depth == 0 && (c == ',' || c == '}')) break;
    }
    std::string v = dict.substr(at, end - at);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
    return v;
  }
  return {};
}

Array npy_parse(const char* op, const Bytes& s, const std::string& what, const Loc& loc) {
  if (s.n < 10 || !s.starts_with(kNpyMagic, 6)) {
    std::string hint;
    if (s.starts_with("PK\x03\x04", 4)) hint = ": it is a zip archive (an .npz?): read it with load_npz";
    else if (s.n >= 9 && s.p[8] == '{') hint = ": it looks like safetensors: read it with load_safetensors";
    user_error(op, what + " is not a .npy file (no \\x93NUMPY magic)" + hint, loc);
  }
  const int major = static_cast<unsigned char>(s.p[6]);
  if (major < 1 || major > 3) user_error(op, what + ": .npy format version " + std::to_string(major) + " is not known", loc);
  const std::size_t pre = major == 1 ? 10 : 12;
  if (s.n < pre) user_error(op, what + ": truncated header", loc);
  const std::uint64_t hlen = s.le(8, major == 1 ? 2 : 4);
  if (hlen > s.n - pre) user_error(op, what + ": truncated header (" + std::to_string(hlen) + " bytes promised)", loc);
  const std::string dict = s.str(pre, static_cast<std::size_t>(hlen));
  std::string descr = dict_value(dict, "descr");
  const std::string fortran = dict_value(dict, "fortran_order"), shape_text = dict_value(dict, "shape");
  if (!descr.empty() && descr.front() == '[') {
    user_error(op, what + ": a structured NumPy type " + descr + " has no arrayjit dtype", loc);
  }
  if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"') || shape_text.size() < 2 ||
      shape_text.front() != '(' || shape_text.back() != ')' || (fortran != "True" && fortran != "False")) {
    user_error(op, what + ": the header does not parse: " + dict, loc);
  }
  descr = descr.substr(1, descr.size() - 2);
  std::vector<std::int64_t> dims;
  {
    std::string body = shape_text.substr(1, shape_text.size() - 2);
    std::istringstream in(body);
    for (std::string tok; std::getline(in, tok, ',');) {
      tok.erase(std::remove_if(tok.begin(), tok.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)) || c == 'L'; }), tok.end());
      if (tok.empty()) continue;
      if (!std::all_of(tok.begin(), tok.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) || tok.size() > 18) {
        user_error(op, what + ": the shape " + shape_text + " does not parse", loc);
      }
      dims.push_back(std::stoll(tok));
    }
    if (dims.size() > 64) user_error(op, what + ": " + std::to_string(dims.size()) + " axes (at most 64)", loc);
  }
  const char order = descr.empty() ? '?' : descr[0];
  const std::string code = order == '<' || order == '>' || order == '|' || order == '=' ? descr.substr(1) : descr;
  DType t = DType::bool_;
  bool known = code == "?";
  for (DType d : kAllDTypes) {
    if (!known && npy_code(d) == code) t = d, known = true;
  }
  if (!known) {
    user_error(op, what + ": NumPy type '" + descr +
                       "' has no arrayjit dtype (bool, the integers of 1 to 8 bytes, float16, float32, float64 are read)",
               loc);
  }
  const bool swap = order == '>';
  const std::int64_t n = checked_count(op, dims, itemsize(t), what, loc);
  const std::uint64_t need = static_cast<std::uint64_t>(n) * itemsize(t), have = s.n - pre - hlen;
  if (have < need) {
    user_error(op, what + ": truncated: " + std::to_string(have) + " bytes of data, " + std::to_string(need) + " expected", loc);
  }
  return array_from(op, t, dims, fortran == "True", s.sub(pre + static_cast<std::size_t>(hlen), static_cast<std::size_t>(need)), swap, loc);
}

}  // namespace

void save(const std::string& path, const Array& a, Loc loc) {
  const HostData h = host_data(a, true, loc);
  const std::string header = npy_header("save", a.dtype(), a.shape(), h.fortran, loc);
  Out out("save", path, loc);
  out.write(header);
  out.write(h.p, h.bytes);
  out.commit();
}

Array load(const std::string& path, Loc loc) { return npy_parse("load", map_file("load", path, loc), quoted(path), loc); }

// ---- zip (.npz) ---------------------------------------------------------------------

namespace {

constexpr std::uint32_t kLocalSig = 0x04034b50u, kCentralSig = 0x02014b50u, kEndSig = 0x06054b50u,
                        kEnd64Sig = 0x06064b50u, kEnd64LocatorSig = 0x07064b50u;

// A member as the central directory lists it.
struct ZipEntry {
  std::string name;
  std::uint32_t crc = 0;
  std::uint64_t csize = 0, usize = 0, offset = 0;
  bool deflated = false;
};

// Streams `pieces` through raw deflate into `out`; returns the bytes written.
std::uint64_t deflate_to(Out& out, const std::vector<std::pair<const char*, std::size_t>>& pieces, const char* op) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    runtime_error("aj::" + std::string(op) + ": zlib's deflateInit2 failed");
  }
  std::unique_ptr<z_stream, void (*)(z_stream*)> end(&z, [](z_stream* s) { deflateEnd(s); });
  std::vector<unsigned char> buf(std::size_t{1} << 18);
  std::uint64_t written = 0;
  auto drain = [&](int flush) {
    int r;
    do {
      z.next_out = buf.data();
      z.avail_out = static_cast<uInt>(buf.size());
      r = deflate(&z, flush);
      if (r == Z_STREAM_ERROR) runtime_error("aj::" + std::string(op) + ": zlib's deflate failed");
      const std::size_t k = buf.size() - z.avail_out;
      out.write(buf.data(), k);
      written += k;
    } while (z.avail_out == 0 || (flush == Z_FINISH && r != Z_STREAM_END));
  };
  for (const auto& [p, n] : pieces) {
    for (std::size_t at = 0; at < n; at += kZlibPiece) {
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(p + at));
      z.avail_in = static_cast<uInt>(std::min(kZlibPiece, n - at));
      drain(Z_NO_FLUSH);
    }
  }
  z.next_in = nullptr;
  z.avail_in = 0;
  drain(Z_FINISH);
  return written;
}

void write_npz(const char* op, const std::string& path, const std::vector<std::pair<std::string, Array>>& arrays, bool compress,
               const Loc& loc) {
  for (const auto& [name, a] : arrays) {
    if (name.size() > 60000) user_error(op, "a name of " + std::to_string(name.size()) + " bytes", loc);
    if (a.valid()) (void)npy_descr(op, a.dtype(), loc);  // bf16: an error before any file exists
  }
  check_and_eval(op, arrays, nullptr, loc);
  const std::uint64_t limit = g_zip64_limit.load(std::memory_order_relaxed);
  Out out(op, path, loc);
  std::vector<ZipEntry> entries;
  for (const auto& [name, a] : arrays) {
    ZipEntry e;
    e.name = name + ".npy";
    e.deflated = compress;
    const HostData h = host_data(a, true, loc);
    const std::string header = npy_header(op, a.dtype(), a.shape(), h.fortran, loc);
    e.usize = header.size() + h.bytes;
    e.offset = out.tell();
    e.crc = crc_update(crc_update(0, header.data(), header.size()), h.p, h.bytes);
    // The local header always carries Zip64 sizes (as NumPy's savez writes
    // it): a deflated member's size is known only after it is written.
    std::string local;
    put_le(local, kLocalSig, 4);
    put_le(local, 45, 2);  // needed: 4.5 (Zip64)
    put_le(local, 0, 2);   // flags
    put_le(local, compress ? 8 : 0, 2);
    put_le(local, 0, 2);     // time
    put_le(local, 0x21, 2);  // date: 1980-01-01
    put_le(local, e.crc, 4);
    put_le(local, 0xffffffffu, 4);
    put_le(local, 0xffffffffu, 4);
    // A stored member's data starts 64-byte aligned in the file (after a
    // padding field of zipalign's kind, tag 0xd935, which readers skip), so
    // load_npz can borrow it from the mapping.
    std::size_t pad = 0;
    if (!compress) {
      pad = (64 - (e.offset + 30 + e.name.size() + 20) % 64) % 64;
      if (pad < 6) pad += 64;
    }
    put_le(local, e.name.size(), 2);
    put_le(local, 20 + pad, 2);  // extra: the Zip64 field, the padding
    local += e.name;
    const std::uint64_t sizes_at = e.offset + local.size() + 4;
    put_le(local, 0x0001, 2);
    put_le(local, 16, 2);
    put_le(local, e.usize, 8);
    put_le(local, compress ? 0 : e.usize, 8);
    if (pad) {
      put_le(local, 0xd935, 2);
      put_le(local, pad - 4, 2);
      put_le(local, 64, 2);
      local.append(pad - 6, '\0');
    }
    out.write(local);
    if (compress) {
      e.csize = deflate_to(out, {{header.data(), header.size()}, {h.p, h.bytes}}, op);
      std::string sizes;
      put_le(sizes, e.usize, 8);
      put_le(sizes, e.csize, 8);
      out.patch(sizes_at, sizes);
    } else {
      e.csize = e.usize;
      out.write(header);
      out.write(h.p, h.bytes);
    }
    entries.push_back(std::move(e));
  }
  const std::uint64_t cd_at = out.tell();
  std::string central;
  for (const ZipEntry& e : entries) {
    std::string extra;
    auto field = [&](std::uint64_t v) -> std::uint64_t {
      if (v < limit) return v;
      put_le(extra, v, 8);
      return 0xffffffffu;
    };
    const std::uint64_t usize = field(e.usize), csize = field(e.csize), offset = field(e.offset);
    if (!extra.empty()) {
      std::string head;
      put_le(head, 0x0001, 2);
      put_le(head, extra.size(), 2);
      extra = head + extra;
    }
    put_le(central, kCentralSig, 4);
    put_le(central, 45, 2);  // made by 4.5
    put_le(central, extra.empty() ? 20 : 45, 2);
    put_le(central, 0, 2);
    put_le(central, e.deflated ? 8 : 0, 2);
    put_le(central, 0, 2);
    put_le(central, 0x21, 2);
    put_le(central, e.crc, 4);
    put_le(central, csize, 4);
    put_le(central, usize, 4);
    put_le(central, e.name.size(), 2);
    put_le(central, extra.size(), 2);
    put_le(central, 0, 2);  // comment
    put_le(central, 0, 2);  // disk
    put_le(central, 0, 2);  // internal attributes
    put_le(central, 0, 4);  // external attributes
    put_le(central, offset, 4);
    central += e.name + extra;
  }
  out.write(central);
  const std::uint64_t count = entries.size(), cd_size = central.size();
  std::string end;
  if (count >= 0xffff || cd_size >= limit || cd_at >= limit) {
    const std::uint64_t end64_at = out.tell();
    put_le(end, kEnd64Sig, 4);
    put_le(end, 44, 8);  // the record's size after this field
    put_le(end, 45, 2);
    put_le(end, 45, 2);
    put_le(end, 0, 4);
    put_le(end, 0, 4);
    put_le(end, count, 8);
    put_le(end, count, 8);
    put_le(end, cd_size, 8);
    put_le(end, cd_at, 8);
    put_le(end, kEnd64LocatorSig, 4);
    put_le(end, 0, 4);
    put_le(end, end64_at, 8);
    put_le(end, 1, 4);
  }
  put_le(end, kEndSig, 4);
  put_le(end, 0, 2);
  put_le(end, 0, 2);
  put_le(end, std::min<std::uint64_t>(count, 0xffff), 2);
  put_le(end, std::min<std::uint64_t>(count, 0xffff), 2);
  put_le(end, cd_size >= limit ? 0xffffffffu : cd_size, 4);
  put_le(end, cd_at >= limit ? 0xffffffffu : cd_at, 4);
  put_le(end, 0, 2);
  out.write(end);
  out.commit();
}

// The members of the archive `s`, from its central directory (Zip64
// included), every range checked against the file.
std::vector<ZipEntry> zip_entries(const char* op, const Bytes& s, const std::string& what, const Loc& loc) {
  // The end of central directory record: the last signature in the final 64 KiB + 22 bytes.
  std::size_t eocd = std::string::npos;
  if (s.n >= 22) {
    const std::size_t lowest = s.n > 65557 ? s.n - 65557 : 0;
    for (std::size_t i = s.n - 21; i-- > lowest;) {
      if (s.le(i, 4) == kEndSig) {
        eocd = i;
        break;
      }
    }
  }
  if (eocd == std::string::npos) {
    std::string hint = s.starts_with(kNpyMagic, 6) ? ": it is a .npy file: read it with load" : "";
    user_error(op, what + " is not a zip (.npz) archive" + hint, loc);
  }
  std::uint64_t count = s.le(eocd + 10, 2), cd_size = s.le(eocd + 12, 4), cd_at = s.le(eocd + 16, 4);
  if (count == 0xffff || cd_size == 0xffffffffu || cd_at == 0xffffffffu) {
    if (eocd < 20 || s.le(eocd - 20, 4) != kEnd64LocatorSig) user_error(op, what + ": a Zip64 archive without its locator", loc);
    const std::uint64_t at = s.le(eocd - 20 + 8, 8);
    if (at > s.n || s.n - at < 56 || s.le(static_cast<std::size_t>(at), 4) != kEnd64Sig) {
      user_error(op, what + ": a broken Zip64 end record", loc);
    }
    count = s.le(static_cast<std::size_t>(at) + 32, 8);
    cd_size = s.le(static_cast<std::size_t>(at) + 40, 8);
    cd_at = s.le(static_cast<std::size_t>(at) + 48, 8);
  }
  if (cd_at > s.n || cd_size > s.n - cd_at) user_error(op, what + ": truncated central directory", loc);
  if (count > cd_size / 46) user_error(op, what + ": " + std::to_string(count) + " members do not fit its central directory", loc);
  std::vector<ZipEntry> out;
  std::size_t at = static_cast<std::size_t>(cd_at);
  const std::size_t cd_end = static_cast<std::size_t>(cd_at + cd_size);
  for (std::uint64_t i = 0; i < count; ++i) {
    if (at + 46 > cd_end || s.le(at, 4) != kCentralSig) user_error(op, what + ": a broken central directory entry", loc);
    ZipEntry e;
    const std::uint64_t method = s.le(at + 10, 2), flags = s.le(at + 8, 2);
    e.crc = static_cast<std::uint32_t>(s.le(at + 16, 4));
    e.csize = s.le(at + 20, 4);
    e.usize = s.le(at + 24, 4);
    const std::size_t nlen = s.le(at + 28, 2), xlen = s.le(at + 30, 2), clen = s.le(at + 32, 2);
    e.offset = s.le(at + 42, 4);
    if (at + 46 + nlen + xlen + clen > cd_end) user_error(op, what + ": a broken central directory entry", loc);
    e.name = s.str(at + 46, nlen);
    const std::string member = what + " member '" + e.name + "'";
    if (flags & 1) user_error(op, member + " is encrypted", loc);
    if (method == 8) e.deflated = true;
    else if (method != 0) user_error(op, member + ": compression method " + std::to_string(method) + " is not read (stored and deflated are)", loc);
    // Zip64: the 64-bit values of the fields set to 0xffffffff, in this order.
    if (e.usize == 0xffffffffu || e.csize == 0xffffffffu || e.offset == 0xffffffffu) {
      std::size_t x = at + 46 + nlen, x_end = x + xlen;
      bool found = false;
      while (x + 4 <= x_end) {
        const std::uint64_t tag = s.le(x, 2), len = s.le(x + 2, 2);
        if (x + 4 + len > x_end) break;
        if (tag == 0x0001) {
          std::size_t f = x + 4;
          for (std::uint64_t* v : {&e.usize, &e.csize, &e.offset}) {
            if (*v != 0xffffffffu) continue;
            if (f + 8 > x + 4 + len) user_error(op, member + ": a short Zip64 field", loc);
            *v = s.le(f, 8);
            f += 8;
          }
          found = true;
          break;
        }
        x += 4 + len;
      }
      if (!found) user_error(op, member + ": sizes of 4 GiB with no Zip64 field", loc);
    }
    at += 46 + nlen + xlen + clen;
    out.push_back(std::move(e));
  }
  return out;
}

// The uncompressed bytes of `e` (borrowed from the mapping when stored),
// CRC-checked.
Bytes zip_member(const char* op, const Bytes& s, const ZipEntry& e, const std::string& member, const Loc& loc) {
  if (e.offset > s.n || s.n - e.offset < 30 || s.le(static_cast<std::size_t>(e.offset), 4) != kLocalSig) {
    user_error(op, member + ": a broken local header", loc);
  }
  const std::size_t local = static_cast<std::size_t>(e.offset);
  const std::uint64_t data_at = e.offset + 30 + s.le(local + 26, 2) + s.le(local + 28, 2);
  if (data_at > s.n || e.csize > s.n - data_at) user_error(op, member + " is truncated", loc);
  Bytes data = s.sub(static_cast<std::size_t>(data_at), static_cast<std::size_t>(e.csize));
  if (e.deflated) {
    // Deflate makes at most 1032 bytes of each byte it reads: a larger size is a lie.
    if (e.usize > e.csize * 1032 + 1024) {
      user_error(op, member + ": an uncompressed size of " + std::to_string(e.usize) + " bytes, more than deflate makes of " +
                         std::to_string(e.csize) + " bytes",
                 loc);
    }
    auto buf = std::shared_ptr<char[]>(new char[std::max<std::size_t>(static_cast<std::size_t>(e.usize), 1)]);
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) runtime_error("aj::" + std::string(op) + ": zlib's inflateInit2 failed");
    std::uint64_t in_at = 0, out_at = 0;
    int r = Z_OK;
    while (true) {
      if (z.avail_in == 0 && in_at < data.n) {
        z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.p + in_at));
        z.avail_in = static_cast<uInt>(std::min<std::uint64_t>(kZlibPiece, data.n - in_at));
        in_at += z.avail_in;
      }
      if (z.avail_out == 0 && out_at < e.usize) {
        z.next_out = reinterpret_cast<Bytef*>(buf.get() + out_at);
        z.avail_out = static_cast<uInt>(std::min<std::uint64_t>(kZlibPiece, e.usize - out_at));
        out_at += z.avail_out;
      }
      const uLong in0 = z.total_in, out0 = z.total_out;
      r = inflate(&z, Z_NO_FLUSH);
      if (r == Z_STREAM_END) break;
      // An error, or no progress: the input ran out or the output is full.
      if ((r != Z_OK && r != Z_BUF_ERROR) || (z.total_in == in0 && z.total_out == out0)) break;
    }
    const bool ok = r == Z_STREAM_END && z.total_out == e.usize;
    inflateEnd(&z);
    if (!ok) user_error(op, member + ": its deflated data does not inflate to " + std::to_string(e.usize) + " bytes", loc);
    data = Bytes{buf.get(), static_cast<std::size_t>(e.usize), std::shared_ptr<const void>(buf, buf.get())};
  } else if (e.usize != e.csize) {
    user_error(op, member + ": stored with sizes " + std::to_string(e.csize) + " and " + std::to_string(e.usize), loc);
  }
  if (crc_update(0, data.p, data.n) != e.crc) user_error(op, member + ": its CRC-32 does not match (a corrupt archive)", loc);
  return data;
}

}  // namespace

void savez(const std::string& path, const std::vector<std::pair<std::string, Array>>& arrays, Loc loc) {
  write_npz("savez", path, arrays, false, loc);
}

void savez_compressed(const std::string& path, const std::vector<std::pair<std::string, Array>>& arrays, Loc loc) {
  write_npz("savez_compressed", path, arrays, true, loc);
}

std::map<std::string, Array> load_npz(const std::string& path, Loc loc) {
  const char* op = "load_npz";
  const Bytes s = map_file(op, path, loc);
  const std::string what = quoted(path);
  std::map<std::string, Array> out;
  for (const ZipEntry& e : zip_entries(op, s, what, loc)) {
    const std::string member = what + " member '" + e.name + "'";
    std::string name = e.name;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
    if (out.count(name)) user_error(op, what + ": the member '" + name + "' twice", loc);
    out.emplace(name, npy_parse(op, zip_member(op, s, e, member, loc), member, loc));
  }
  return out;
}

std::uint64_t detail::set_zip64_limit(std::uint64_t bytes) { return g_zip64_limit.exchange(bytes); }

// ---- safetensors ----------------------------------------------------------------------

namespace {

// safetensors' dtype name: BOOL, BF16, or the kind's letter and the bits (U8, I64, F16).
std::string st_dtype(DType t) {
  const std::string bits = std::to_string(8 * itemsize(t));
  switch (dtype_kind(t)) {
    case DTypeKind::Bool: return "BOOL";
    case DTypeKind::Unsigned: return "U" + bits;
    case DTypeKind::Signed: return "I" + bits;
    case DTypeKind::Float: return t == DType::bf16 ? "BF16" : "F" + bits;
  }
  return "?";
}

std::string json_string(const std::string& v) {
  std::string o = "\"";
  for (const char c : v) {
    if (c == '"' || c == '\\') o += std::string("\\") + c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      o += buf;
    } else o += c;
  }
  return o + "\"";
}

// A JSON value of the shapes safetensors headers use: objects, arrays,
// strings, integers.
struct Json {
  enum class Kind { object, array, string, number } kind = Kind::number;
  std::vector<std::pair<std::string, Json>> members;  // object (in order)
  std::vector<Json> items;                            // array
  std::string text;                                   // string
  std::int64_t number = 0;
  const Json* get(const std::string& k) const {
    for (const auto& [key, v] : members) {
      if (key == k) return &v;
    }
    return nullptr;
  }
};

struct JsonParser {
  const std::string& s;
  std::size_t at = 0;
  const char* op;
  const std::string& what;
  const Loc& loc;
  [[noreturn]] void fail(const std::string& why) {
    user_error(op, what + ": the header is not valid JSON (" + why + " at byte " + std::to_string(at) + ")", loc);
  }
  void ws() {
    while (at < s.size() && std::isspace(static_cast<unsigned char>(s[at]))) ++at;
  }
  char peek() {
    ws();
    if (at >= s.size()) fail("unexpected end");
    return s[at];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++at;
  }
  std::string string() {
    expect('"');
    std::string o;
    while (true) {
      if (at >= s.size()) fail("an unterminated string");
      const char c = s[at++];
      if (c == '"') return o;
      if (c != '\\') {
        o += c;
        continue;
      }
      if (at >= s.size()) fail("an unterminated escape");
      const char e = s[at++];
      switch (e) {
        case 'n': o += '\n'; break;
        case 't': o += '\t'; break;
        case 'r': o += '\r'; break;
        case 'b': o += '\b'; break;
        case 'f': o += '\f'; break;
        case 'u': {
          if (at + 4 > s.size() || !std::all_of(s.begin() + static_cast<std::ptrdiff_t>(at), s.begin() + static_cast<std::ptrdiff_t>(at + 4),
                                                [](char h) { return std::isxdigit(static_cast<unsigned char>(h)) != 0; })) {
            fail("a bad \\u escape");
          }
          const unsigned cp = static_cast<unsigned>(std::stoul(s.substr(at, 4), nullptr, 16));
          at += 4;
          if (cp < 0x80) o += static_cast<char>(cp);
          else if (cp < 0x800) { o += static_cast<char>(0xc0 | (cp >> 6)); o += static_cast<char>(0x80 | (cp & 0x3f)); }
          else { o += static_cast<char>(0xe0 | (cp >> 12)); o += static_cast<char>(0x80 | ((cp >> 6) & 0x3f)); o += static_cast<char>(0x80 | (cp & 0x3f)); }
          break;
        }
        default: o += e;
      }
    }
  }
  Json value(int depth = 0) {
    if (depth > 16) fail("nesting too deep");
    Json v;
    const char c = peek();
    if (c == '{') {
      v.kind = Json::Kind::object;
      ++at;
      if (peek() == '}') { ++at; return v; }
      while (true) {
        std::string k = string();
        if (v.get(k)) fail("the key \"" + k + "\" twice");
        expect(':');
        v.members.emplace_back(std::move(k), value(depth + 1));
        if (peek() == ',') { ++at; continue; }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = Json::Kind::array;
      ++at;
      if (peek() == ']') { ++at; return v; }
      while (true) {
        v.items.push_back(value(depth + 1));
        if (peek() == ',') { ++at; continue; }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = Json::Kind::string;
      v.text = string();
      return v;
    }
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      const std::size_t start = at;
      if (s[at] == '-') ++at;
      while (at < s.size() && std::isdigit(static_cast<unsigned char>(s[at]))) ++at;
      if (at - start > 18) fail("a number too large");
      v.number = std::stoll(s.substr(start, at - start));
      return v;
    }
    fail("an unexpected character");
  }
};


struct StTensor {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> dims;
  std::uint64_t begin = 0, end = 0;
};

struct StFile {
  Bytes bytes;
  std::size_t data_at = 0;
  Json header;
  std::vector<StTensor> tensors;  // in the header's order
};

DType st_dtype_of(const char* op, const std::string& d, const std::string& what, const Loc& loc) {
  std::string ours;
  for (DType t : kAllDTypes) {
    if (d == st_dtype(t)) return t;
    ours += std::string(ours.empty() ? "" : ", ") + st_dtype(t);
  }
  user_error(op, what + ": dtype " + d + " has no arrayjit dtype (" + ours + " are read)", loc);
}

// The file mapped, its header parsed and every tensor's entry checked as
// the format's reference reader checks it: a dtype, a shape and offsets
// that hold exactly its elements, tensors packed in the data with no
// overlap, no gap and nothing after the last.
StFile st_read(const char* op, const std::string& path, const Loc& loc) {
  StFile f;
  f.bytes = map_file(op, path, loc);
  const std::string what = quoted(path);
  if (f.bytes.n < 8) user_error(op, what + " is not a safetensors file (shorter than its header size)", loc);
  const std::uint64_t n = f.bytes.le(0, 8);
  if (n > f.bytes.n - 8 || n > 100'000'000) {
    std::string hint = f.bytes.starts_with(kNpyMagic, 6) ? ": it is a .npy file: read it with load"
                       : f.bytes.starts_with("PK\x03\x04", 4) ? ": it is a zip archive (an .npz?): read it with load_npz" : "";
    user_error(op, what + " is not a safetensors file (a header size of " + std::to_string(n) + " bytes)" + hint, loc);
  }
  const std::string text = f.bytes.str(8, static_cast<std::size_t>(n));
  JsonParser p{text, 0, op, what, loc};
  f.header = p.value();
  if (f.header.kind != Json::Kind::object) user_error(op, what + ": the header is not a JSON object", loc);
  f.data_at = 8 + static_cast<std::size_t>(n);
  const std::uint64_t data_size = f.bytes.n - f.data_at;
  for (const auto& [name, v] : f.header.members) {
    if (name == "__metadata__") {
      if (v.kind != Json::Kind::object) user_error(op, what + ": __metadata__ is not an object", loc);
      for (const auto& [k, m] : v.members) {
        if (m.kind != Json::Kind::string) user_error(op, what + ": metadata '" + k + "' is not a string", loc);
      }
      continue;
    }
    const std::string tw = what + " tensor '" + name + "'";
    const Json* dt = v.get("dtype");
    const Json* shape = v.get("shape");
    const Json* offs = v.get("data_offsets");
    if (v.kind != Json::Kind::object || !dt || dt->kind != Json::Kind::string || !shape ||
        shape->kind != Json::Kind::array || !offs || offs->kind != Json::Kind::array || offs->items.size() != 2 ||
        offs->items[0].kind != Json::Kind::number || offs->items[1].kind != Json::Kind::number) {
      user_error(op, tw + ": needs dtype, shape and data_offsets", loc);
    }
    StTensor t;
    t.name = name;
    t.dtype = st_dtype_of(op, dt->text, tw, loc);
    for (const Json& e : shape->items) {
      if (e.kind != Json::Kind::number) user_error(op, tw + ": a shape entry that is not a number", loc);
      t.dims.push_back(e.number);
    }
    if (t.dims.size() > 64) user_error(op, tw + ": " + std::to_string(t.dims.size()) + " axes (at most 64)", loc);
    const std::int64_t count = checked_count(op, t.dims, itemsize(t.dtype), tw, loc);
    const std::int64_t b = offs->items[0].number, e = offs->items[1].number;
    if (b < 0 || e < b || static_cast<std::uint64_t>(e) > data_size ||
        static_cast<std::uint64_t>(e - b) != static_cast<std::uint64_t>(count) * itemsize(t.dtype)) {
      user_error(op, tw + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(e) + "] do not hold " +
                         std::to_string(count) + " " + dtype_name(t.dtype) + " elements in " + std::to_string(data_size) +
                         " bytes of data",
                 loc);
    }
    t.begin = static_cast<std::uint64_t>(b);
    t.end = static_cast<std::uint64_t>(e);
    f.tensors.push_back(std::move(t));
  }
  std::vector<const StTensor*> by_offset;
  for (const StTensor& t : f.tensors) by_offset.push_back(&t);
  std::stable_sort(by_offset.begin(), by_offset.end(), [](const StTensor* a, const StTensor* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  std::uint64_t at = 0;
  const StTensor* prev = nullptr;
  for (const StTensor* t : by_offset) {
    if (t->begin < at) {
      user_error(op, what + ": tensor '" + t->name + "' [" + std::to_string(t->begin) + ", " + std::to_string(t->end) +
                         ") overlaps '" + prev->name + "' [" + std::to_string(prev->begin) + ", " + std::to_string(prev->end) + ")",
                 loc);
    }
    if (t->begin > at) {
      user_error(op, what + ": " + std::to_string(t->begin - at) + " bytes before tensor '" + t->name +
                         "' belong to no tensor (safetensors packs them)",
                 loc);
    }
    at = t->end;
    prev = t;
  }
  if (at != data_size) {
    user_error(op, what + ": " + std::to_string(data_size - at) + " bytes after the last tensor belong to no tensor", loc);
  }
  return f;
}

}  // namespace

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Array>>& arrays,
                      const std::map<std::string, std::string>& metadata, Loc loc) {
  const char* op = "save_safetensors";
  check_and_eval(op, arrays, "__metadata__", loc);
  std::string header = "{";
  bool first = true;
  auto sep = [&] {
    if (!first) header += ",";
    first = false;
  };
  if (!metadata.empty()) {
    sep();
    header += "\"__metadata__\":{";
    bool f2 = true;
    for (const auto& [k, v] : metadata) {
      header += (f2 ? "" : ",") + json_string(k) + ":" + json_string(v);
      f2 = false;
    }
    header += "}";
  }
  std::vector<HostData> data;
  std::uint64_t offset = 0;
  for (const auto& [name, a] : arrays) {
    data.push_back(host_data(a, false, loc));
    const std::uint64_t b = data.back().bytes;
    std::string shape = "[";
    for (int d = 0; d < a.ndim(); ++d) shape += (d ? "," : "") + std::to_string(a.shape()[d]);
    shape += "]";
    sep();
    header += json_string(name) + ":{\"dtype\":\"" + st_dtype(a.dtype()) + "\",\"shape\":" + shape +
              ",\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + b) + "]}";
    offset += b;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string size;
  put_le(size, header.size(), 8);
  Out out(op, path, loc);
  out.write(size);
  out.write(header);
  for (const HostData& h : data) out.write(h.p, h.bytes);
  out.commit();
}

std::map<std::string, Array> load_safetensors(const std::string& path, Loc loc) {
  const char* op = "load_safetensors";
  const StFile f = st_read(op, path, loc);
  std::map<std::string, Array> out;
  for (const StTensor& t : f.tensors) {
    const Bytes b = f.bytes.sub(f.data_at + static_cast<std::size_t>(t.begin), static_cast<std::size_t>(t.end - t.begin));
    out.emplace(t.name, array_from(op, t.dtype, t.dims, false, b, false, loc));
  }
  return out;
}

std::map<std::string, std::string> safetensors_metadata(const std::string& path, Loc loc) {
  const StFile f = st_read("safetensors_metadata", path, loc);
  std::map<std::string, std::string> out;
  if (const Json* m = f.header.get("__metadata__")) {
    for (const auto& [k, v] : m->members) out[k] = v.text;
  }
  return out;
}

}  // namespace aj
