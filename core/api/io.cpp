// .npy, .npz and safetensors (see arrayjit/io.hpp).
#include "arrayjit/io.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "arrayjit/error.hpp"

namespace aj {

namespace {

// ---- bytes ------------------------------------------------------------------------

std::string read_file(const char* op, const std::string& path, const Loc& loc) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) user_error(op, "'" + path + "' is not a file that exists", loc);
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error(op, "cannot open '" + path + "' for reading", loc);
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) user_error(op, "reading '" + path + "' failed", loc);
  return s.str();
}

// Written to a temporary beside `path`, then renamed into place: a failure
// leaves no partial file.
void write_file(const char* op, const std::string& path, const std::string& bytes, const Loc& loc) {
  const std::string tmp = path + ".aj-tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) user_error(op, "cannot open '" + path + "' for writing", loc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      runtime_error("aj::" + std::string(op) + ": writing '" + path + "' failed (disk full?) (at " + loc_str(loc) + ")");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    user_error(op, "cannot write '" + path + "': " + ec.message(), loc);
  }
}

template <class T>
void put_le(std::string& s, T v, int bytes) {
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xff));
}
std::uint64_t get_le(const std::string& s, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[at + static_cast<std::size_t>(i)])) << (8 * i);
  return v;
}

// The array's elements, row-major, little-endian (this host), in its dtype.
std::string bytes_of(const Array& a, const Loc& loc) {
  const Array h = a.to(Device::cpu(), loc);
  std::string out(static_cast<std::size_t>(h.size()) * itemsize(h.dtype()), '\0');
  if (!out.empty()) h.copy_to(out.data(), {}, loc);
  return out;
}

std::int64_t checked_count(const char* op, const std::vector<std::int64_t>& shape, std::size_t item,
                           const std::string& what, const Loc& loc) {
  std::int64_t n = 1;
  for (std::int64_t e : shape) {
    if (e < 0) user_error(op, what + ": a negative extent in its shape", loc);
    if (e != 0 && n > std::numeric_limits<std::int64_t>::max() / static_cast<std::int64_t>(item) / e) {
      user_error(op, what + ": its shape's size overflows", loc);
    }
    n *= e;
  }
  return n;
}

// An array of dtype `t` from `count` elements at `p` (little-endian, or
// big-endian with `swap`).
Array array_of(DType t, const Shape& shape, const char* p, bool swap, const Loc& loc) {
  const std::size_t n = static_cast<std::size_t>(shape.numel()), item = itemsize(t);
  std::string buf(p, n * item);
  if (swap && item > 1) {
    for (std::size_t i = 0; i < n; ++i) std::reverse(buf.begin() + static_cast<std::ptrdiff_t>(i * item),
                                                     buf.begin() + static_cast<std::ptrdiff_t>((i + 1) * item));
  }
  auto typed = [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> v(n);
    if (n) std::memcpy(static_cast<void*>(v.data()), buf.data(), n * sizeof(T));
    return from_vector<T>(v, shape, loc);
  };
  switch (t) {
    case DType::bool_: {
      std::vector<std::int32_t> v(n);
      for (std::size_t i = 0; i < n; ++i) v[i] = buf[i] != 0;
      return from_vector<std::int32_t>(v, shape, loc).astype(DType::bool_, loc).eval(loc);
    }
    case DType::i32: return typed(std::int32_t{});
    case DType::i64: return typed(std::int64_t{});
    case DType::f32: return typed(float{});
    case DType::f64: return typed(double{});
    case DType::f16: return typed(f16{});
    case DType::bf16: return typed(bf16{});
  }
  internal_error("io: a dtype with no reader");
}

// ---- .npy -----------------------------------------------------------------------------

const char kNpyMagic[] = "\x93NUMPY";

std::string npy_descr(const char* op, DType t, const Loc& loc) {
  switch (t) {
    case DType::bool_: return "|b1";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::f16: return "<f2";
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    case DType::bf16: break;
  }
  user_error(op, "bf16 has no NumPy type: cast to f32 first, or use save_safetensors", loc);
}

std::string npy_bytes(const char* op, const Array& a, const Loc& loc) {
  std::string shape = "(";
  for (int d = 0; d < a.ndim(); ++d) shape += std::to_string(a.shape()[d]) + (a.ndim() == 1 ? "," : d + 1 < a.ndim() ? ", " : "");
  shape += ")";
  std::string dict = "{'descr': '" + npy_descr(op, a.dtype(), loc) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Padded with spaces and ended by '\n' so the data starts on a 64-byte boundary.
  const bool v2 = dict.size() + 1 + 10 > 65535;
  const std::size_t pre = v2 ? 12 : 10;
  const std::size_t total = (pre + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - pre - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string out(kNpyMagic, 6);
  out.push_back(static_cast<char>(v2 ? 2 : 1));
  out.push_back('\0');
  put_le(out, dict.size(), v2 ? 4 : 2);
  out += dict;
  out += bytes_of(a, loc);
  return out;
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

Array npy_parse(const char* op, const std::string& s, const std::string& what, const Loc& loc) {
  if (s.size() < 10 || s.compare(0, 6, kNpyMagic, 6) != 0) user_error(op, what + " is not a .npy file (no \\x93NUMPY magic)", loc);
  const int major = static_cast<unsigned char>(s[6]);
  if (major < 1 || major > 3) user_error(op, what + ": .npy format version " + std::to_string(major) + " is not known", loc);
  const std::size_t pre = major == 1 ? 10 : 12;
  if (s.size() < pre) user_error(op, what + ": truncated header", loc);
  const std::size_t hlen = get_le(s, 8, major == 1 ? 2 : 4);
  if (s.size() < pre + hlen) user_error(op, what + ": truncated header", loc);
  const std::string dict = s.substr(pre, hlen);
  std::string descr = dict_value(dict, "descr");
  const std::string fortran = dict_value(dict, "fortran_order"), shape_text = dict_value(dict, "shape");
  if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"') || shape_text.empty() || shape_text.front() != '(' ||
      (fortran != "True" && fortran != "False")) {
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
  }
  const char order = descr.empty() ? '?' : descr[0];
  const std::string code = order == '<' || order == '>' || order == '|' || order == '=' ? descr.substr(1) : descr;
  DType t;
  if (code == "f4") t = DType::f32;
  else if (code == "f8") t = DType::f64;
  else if (code == "f2") t = DType::f16;
  else if (code == "i4") t = DType::i32;
  else if (code == "i8") t = DType::i64;
  else if (code == "b1" || code == "?") t = DType::bool_;
  else {
    user_error(op, what + ": NumPy type '" + descr + "' has no arrayjit dtype (bool, int32, int64, float16, float32, float64 are read)", loc);
  }
  const bool swap = order == '>';
  const std::int64_t n = checked_count(op, dims, itemsize(t), what, loc);
  const std::size_t need = static_cast<std::size_t>(n) * itemsize(t);
  if (s.size() - pre - hlen < need) {
    user_error(op, what + ": truncated: " + std::to_string(s.size() - pre - hlen) + " bytes of data, " + std::to_string(need) + " expected", loc);
  }
  const bool fortran_order = fortran == "True";
  if (!fortran_order) return array_of(t, Shape(dims), s.data() + pre + hlen, swap, loc);
  // Column-major: the reversed shape row-major, transposed back.
  std::vector<std::int64_t> rev(dims.rbegin(), dims.rend());
  std::vector<int> perm;
  for (int d = static_cast<int>(dims.size()); d-- > 0;) perm.push_back(d);
  return array_of(t, Shape(rev), s.data() + pre + hlen, swap, loc).transpose(perm, loc);
}

// ---- zip (.npz) ---------------------------------------------------------------------

std::uint32_t crc32_of(const std::string& s) {
  return static_cast<std::uint32_t>(::crc32(0L, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size())));
}

std::string inflate_raw(const char* op, const std::string& in, std::size_t out_size, const std::string& what, const Loc& loc) {
  std::string out(out_size, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) runtime_error("aj::" + std::string(op) + ": zlib's inflateInit2 failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int r = inflate(&z, Z_FINISH);
  const std::size_t got = out.size() - z.avail_out;
  inflateEnd(&z);
  if (r != Z_STREAM_END || got != out_size) user_error(op, what + ": its deflated data does not inflate", loc);
  return out;
}

}  // namespace

void save(const std::string& path, const Array& a, Loc loc) { write_file("save", path, npy_bytes("save", a, loc), loc); }

Array load(const std::string& path, Loc loc) {
  return npy_parse("load", read_file("load", path, loc), "'" + path + "'", loc);
}

void savez(const std::string& path, const std::vector<std::pair<std::string, Array>>& arrays, Loc loc) {
  std::string zip, central;
  std::vector<std::string> seen;
  for (const auto& [name, a] : arrays) {
    if (name.empty()) user_error("savez", "an empty name", loc);
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) user_error("savez", "the name '" + name + "' twice", loc);
    seen.push_back(name);
    const std::string file = name + ".npy", data = npy_bytes("savez", a, loc);
    if (data.size() >= 0xffffffffu || zip.size() >= 0xffffffffu) {
      user_error("savez", "'" + name + "' makes the archive 4 GiB or more (Zip64 is not written): use save per array", loc);
    }
    const std::uint32_t crc = crc32_of(data);
    const auto offset = static_cast<std::uint32_t>(zip.size());
    auto header = [&](std::string& s, bool central_entry) {
      put_le(s, central_entry ? 0x02014b50u : 0x04034b50u, 4);
      if (central_entry) put_le(s, 20, 2);  // made by
      put_le(s, 20, 2);                     // needed: 2.0
      put_le(s, 0, 2);                      // flags
      put_le(s, 0, 2);                      // stored
      put_le(s, 0, 2);                      // time
      put_le(s, 0x21, 2);                   // date: 1980-01-01
      put_le(s, crc, 4);
      put_le(s, data.size(), 4);
      put_le(s, data.size(), 4);
      put_le(s, file.size(), 2);
      put_le(s, 0, 2);  // extra
      if (central_entry) {
        put_le(s, 0, 2);  // comment
        put_le(s, 0, 2);  // disk
        put_le(s, 0, 2);  // internal attributes
        put_le(s, 0, 4);  // external attributes
        put_le(s, offset, 4);
      }
      s += file;
    };
    header(zip, false);
    zip += data;
    header(central, true);
  }
  const auto cd_offset = static_cast<std::uint32_t>(zip.size());
  zip += central;
  put_le(zip, 0x06054b50u, 4);
  put_le(zip, 0, 2);
  put_le(zip, 0, 2);
  put_le(zip, arrays.size(), 2);
  put_le(zip, arrays.size(), 2);
  put_le(zip, central.size(), 4);
  put_le(zip, cd_offset, 4);
  put_le(zip, 0, 2);
  write_file("savez", path, zip, loc);
}

std::map<std::string, Array> load_npz(const std::string& path, Loc loc) {
  const char* op = "load_npz";
  const std::string s = read_file(op, path, loc);
  const std::string what = "'" + path + "'";
  // The end of central directory record: the last signature in the final 64 KiB + 22 bytes.
  std::size_t eocd = std::string::npos;
  const std::size_t lowest = s.size() > 65557 ? s.size() - 65557 : 0;
  for (std::size_t i = s.size() >= 22 ? s.size() - 21 : 0; i-- > lowest;) {
    if (get_le(s, i, 4) == 0x06054b50u) {
      eocd = i;
      break;
    }
  }
  if (eocd == std::string::npos) user_error(op, what + " is not a zip (.npz) archive", loc);
  const std::size_t count = get_le(s, eocd + 10, 2), cd_size = get_le(s, eocd + 12, 4), cd_at = get_le(s, eocd + 16, 4);
  if (cd_at + cd_size > s.size()) user_error(op, what + ": truncated central directory", loc);
  std::map<std::string, Array> out;
  std::size_t at = cd_at;
  for (std::size_t e = 0; e < count; ++e) {
    if (at + 46 > s.size() || get_le(s, at, 4) != 0x02014b50u) user_error(op, what + ": a broken central directory entry", loc);
    const std::size_t method = get_le(s, at + 10, 2), csize = get_le(s, at + 20, 4), usize = get_le(s, at + 24, 4);
    const std::size_t nlen = get_le(s, at + 28, 2), xlen = get_le(s, at + 30, 2), clen = get_le(s, at + 32, 2);
    const std::size_t local = get_le(s, at + 42, 4);
    if (at + 46 + nlen > s.size()) user_error(op, what + ": a broken central directory entry", loc);
    std::string name = s.substr(at + 46, nlen);
    const auto crc = static_cast<std::uint32_t>(get_le(s, at + 16, 4));
    at += 46 + nlen + xlen + clen;
    if (csize == 0xffffffffu || usize == 0xffffffffu || local == 0xffffffffu) {
      user_error(op, what + ": member '" + name + "' is a Zip64 entry (over 4 GiB), not read", loc);
    }
    if (local + 30 > s.size() || get_le(s, local, 4) != 0x04034b50u) user_error(op, what + ": a broken local header for '" + name + "'", loc);
    const std::size_t data_at = local + 30 + get_le(s, local + 26, 2) + get_le(s, local + 28, 2);
    if (data_at + csize > s.size()) user_error(op, what + ": member '" + name + "' is truncated", loc);
    const std::string member = what + " member '" + name + "'";
    std::string data = s.substr(data_at, csize);
    if (method == 8) data = inflate_raw(op, data, usize, member, loc);
    else if (method != 0) user_error(op, member + ": compression method " + std::to_string(method) + " is not read (stored and deflated are)", loc);
    if (crc32_of(data) != crc) {
      user_error(op, member + ": its CRC-32 does not match (a corrupt archive)", loc);
    }
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
    out.insert_or_assign(name, npy_parse(op, data, member, loc));
  }
  return out;
}

// ---- safetensors ----------------------------------------------------------------------

namespace {

const char* st_dtype(DType t) {
  switch (t) {
    case DType::bool_: return "BOOL";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::f32: return "F32";
    case DType::f64: return "F64";
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
          if (at + 4 > s.size()) fail("a short \\u escape");
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

struct StFile {
  std::string bytes;
  std::size_t data_at = 0;
  Json header;
};

StFile st_read(const char* op, const std::string& path, const Loc& loc) {
  StFile f;
  f.bytes = read_file(op, path, loc);
  const std::string what = "'" + path + "'";
  if (f.bytes.size() < 8) user_error(op, what + " is not a safetensors file (shorter than its header size)", loc);
  const std::uint64_t n = get_le(f.bytes, 0, 8);
  if (n > f.bytes.size() - 8 || n > (std::uint64_t{100} << 20)) {
    user_error(op, what + " is not a safetensors file (a header size of " + std::to_string(n) + " bytes)", loc);
  }
  const std::string text = f.bytes.substr(8, n);
  JsonParser p{text, 0, op, what, loc};
  f.header = p.value();
  if (f.header.kind != Json::Kind::object) user_error(op, what + ": the header is not a JSON object", loc);
  f.data_at = 8 + n;
  return f;
}

}  // namespace

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Array>>& arrays,
                      const std::map<std::string, std::string>& metadata, Loc loc) {
  std::string header = "{", data;
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
  std::vector<std::string> seen;
  for (const auto& [name, a] : arrays) {
    if (name.empty() || name == "__metadata__") user_error("save_safetensors", "the name '" + name + "' cannot be used", loc);
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) user_error("save_safetensors", "the name '" + name + "' twice", loc);
    seen.push_back(name);
    const std::string b = bytes_of(a, loc);
    std::string shape = "[";
    for (int d = 0; d < a.ndim(); ++d) shape += (d ? "," : "") + std::to_string(a.shape()[d]);
    shape += "]";
    sep();
    header += json_string(name) + ":{\"dtype\":\"" + st_dtype(a.dtype()) + "\",\"shape\":" + shape +
              ",\"data_offsets\":[" + std::to_string(data.size()) + "," + std::to_string(data.size() + b.size()) + "]}";
    data += b;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string out;
  put_le(out, header.size(), 8);
  out += header;
  out += data;
  write_file("save_safetensors", path, out, loc);
}

std::map<std::string, Array> load_safetensors(const std::string& path, Loc loc) {
  const char* op = "load_safetensors";
  const StFile f = st_read(op, path, loc);
  const std::size_t data_size = f.bytes.size() - f.data_at;
  std::map<std::string, Array> out;
  for (const auto& [name, v] : f.header.members) {
    if (name == "__metadata__") continue;
    const std::string what = "'" + path + "' tensor '" + name + "'";
    const Json* dt = v.get("dtype");
    const Json* shape = v.get("shape");
    const Json* offs = v.get("data_offsets");
    if (v.kind != Json::Kind::object || !dt || dt->kind != Json::Kind::string || !shape ||
        shape->kind != Json::Kind::array || !offs || offs->kind != Json::Kind::array || offs->items.size() != 2) {
      user_error(op, what + ": needs dtype, shape and data_offsets", loc);
    }
    DType t;
    const std::string& d = dt->text;
    if (d == "F32") t = DType::f32;
    else if (d == "F64") t = DType::f64;
    else if (d == "F16") t = DType::f16;
    else if (d == "BF16") t = DType::bf16;
    else if (d == "I32") t = DType::i32;
    else if (d == "I64") t = DType::i64;
    else if (d == "BOOL") t = DType::bool_;
    else user_error(op, what + ": dtype " + d + " has no arrayjit dtype (BOOL, I32, I64, F16, BF16, F32, F64 are read)", loc);
    std::vector<std::int64_t> dims;
    for (const Json& e : shape->items) {
      if (e.kind != Json::Kind::number) user_error(op, what + ": a shape entry that is not a number", loc);
      dims.push_back(e.number);
    }
    const std::int64_t n = checked_count(op, dims, itemsize(t), what, loc);
    const std::int64_t b = offs->items[0].number, e = offs->items[1].number;
    if (b < 0 || e < b || static_cast<std::uint64_t>(e) > data_size ||
        static_cast<std::uint64_t>(e - b) != static_cast<std::uint64_t>(n) * itemsize(t)) {
      user_error(op, what + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(e) + "] do not hold " +
                         std::to_string(n) + " " + dtype_name(t) + " elements in " + std::to_string(data_size) + " bytes of data",
                 loc);
    }
    out.insert_or_assign(name, array_of(t, Shape(dims), f.bytes.data() + f.data_at + b, false, loc));
  }
  return out;
}

std::map<std::string, std::string> safetensors_metadata(const std::string& path, Loc loc) {
  const char* op = "safetensors_metadata";
  const StFile f = st_read(op, path, loc);
  std::map<std::string, std::string> out;
  if (const Json* m = f.header.get("__metadata__")) {
    for (const auto& [k, v] : m->members) {
      if (v.kind != Json::Kind::string) user_error(op, "'" + path + "': metadata '" + k + "' is not a string", loc);
      out[k] = v.text;
    }
  }
  return out;
}

}  // namespace aj
