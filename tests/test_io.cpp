// Saving and loading (arrayjit/io.hpp): round trips of every dtype through
// .npy, .npz and safetensors on random data; files NumPy writes (C and
// Fortran order, big-endian, savez_compressed, Zip64) read right and files
// we write read right in NumPy; loaded arrays borrow the file's mapping
// (no copy, the mapping lives while they do); a safetensors file laid out as
// the format's reference writer lays it out loads with equal bytes; bad files
// are errors naming the file that create nothing; the C functions.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>
#include <arrayjit/arrayjit.h>
#include <arrayjit/io.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

// tests/test_bad_inputs.cpp replaces operator new for the test binary and
// tracks its largest request on this thread.
std::size_t aj_test_largest_new_since_last_call();

namespace {

using aj::Array;
using aj::DType;

std::string tmp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("aj_test_io_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

Array random_of(DType t, aj::Shape s, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-100, 100);
  std::vector<double> v(static_cast<std::size_t>(s.numel()));
  for (auto& x : v) x = u(rng);
  Array a = aj::from_vector<double>(v, s);
  if (t == DType::bool_) return (a > 0).eval();
  return a.astype(t).eval();
}

// Same dtype, shape and bits (as f64 values; NaN-free data).
void check_same(const Array& got, const Array& want, const std::string& what) {
  CAPTURE(what);
  CHECK(got.dtype() == want.dtype());
  REQUIRE(got.shape() == want.shape());
  CHECK(got.astype(DType::f64).to_vector<double>() == want.astype(DType::f64).to_vector<double>());
}

bool have_numpy() { return std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") == 0; }

int python(const std::string& code) {
  const std::string script = tmp_path("script.py");
  std::ofstream(script) << code;
  return std::system(("/usr/bin/python3 " + script + " > " + tmp_path("script.out") + " 2>&1").c_str());
}

std::string python_output() {
  std::ifstream in(tmp_path("script.out"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Whether this process maps `path` now (/proc/self/maps).
bool mapped(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  const std::string canon = std::filesystem::canonical(path).string();
  for (std::string line; std::getline(maps, line);) {
    if (line.find(canon) != std::string::npos) return true;
  }
  return false;
}

template <class F>
void expect_error(F&& f, const std::string& part) {
  try {
    f();
    FAIL("no error; expected: " << part);
  } catch (const aj::Error& e) {
    CHECK_MESSAGE(std::string(e.what()).find(part) != std::string::npos, e.what());
  }
}

// The bytes of a file.
std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("io: every dtype and rank round-trips through .npy, .npz and safetensors") {
  std::vector<std::pair<std::string, Array>> named;
  unsigned seed = 1;
  for (DType t : {DType::bool_, DType::i32, DType::i64, DType::f16, DType::bf16, DType::f32, DType::f64}) {
    for (const aj::Shape& s : {aj::Shape{}, aj::Shape{7}, aj::Shape{3, 5}, aj::Shape{2, 0, 3}, aj::Shape{2, 3, 4}}) {
      const Array a = random_of(t, s, seed++);
      const std::string name = std::string(aj::dtype_name(t)) + "_" + std::to_string(s.ndim()) + "_" + std::to_string(seed);
      named.emplace_back(name, a);
      if (t != DType::bf16) {
        const std::string p = tmp_path(name + ".npy");
        aj::save(p, a);
        check_same(aj::load(p), a, ".npy " + name);
      }
    }
  }
  // A strided, lazy view is saved as its values.
  const Array base = random_of(DType::f32, {6, 8}, 99);
  const Array view = aj::slice(base.T(), 0, 1, 7, 2) * 2;
  aj::save(tmp_path("view.npy"), view);
  check_same(aj::load(tmp_path("view.npy")), view.eval(), "a lazy transposed slice");

  aj::save_safetensors(tmp_path("all.safetensors"), named, {{"format", "pt"}, {"note", "tab\there \"quoted\""}});
  auto st = aj::load_safetensors(tmp_path("all.safetensors"));
  REQUIRE(st.size() == named.size());
  for (const auto& [name, a] : named) check_same(st.at(name), a, "safetensors " + name);
  const auto meta = aj::safetensors_metadata(tmp_path("all.safetensors"));
  CHECK(meta.at("format") == "pt");
  CHECK(meta.at("note") == "tab\there \"quoted\"");

  std::vector<std::pair<std::string, Array>> no_bf16;
  for (const auto& [name, a] : named) {
    if (a.dtype() != DType::bf16) no_bf16.emplace_back(name, a);
  }
  aj::savez(tmp_path("all.npz"), no_bf16);
  auto z = aj::load_npz(tmp_path("all.npz"));
  REQUIRE(z.size() == no_bf16.size());
  for (const auto& [name, a] : no_bf16) check_same(z.at(name), a, "npz " + name);
}

TEST_CASE("io: files NumPy writes read right, and NumPy reads ours") {
  if (!have_numpy()) {
    MESSAGE("no /usr/bin/python3 with numpy: skipped");
    return;
  }
  const std::string d = std::filesystem::path(tmp_path("x")).parent_path().string();
  REQUIRE(python("import numpy as np\n"
                 "d = '" + d + "'\n"
                 "a = np.arange(24, dtype=np.float64).reshape(2, 3, 4) * 0.5 - 3\n"
                 "np.save(d + '/np_c.npy', a)\n"
                 "np.save(d + '/np_f.npy', np.asfortranarray(a))\n"
                 "np.save(d + '/np_be.npy', a.astype('>f4'))\n"
                 "np.save(d + '/np_bool.npy', a > 0)\n"
                 "np.save(d + '/np_i8.npy', a.astype(np.int8))\n"
                 "np.save(d + '/np_u2be.npy', (a + 3).astype('>u2'))\n"
                 "np.save(d + '/np_c8.npy', a.astype(np.complex64))\n"
                 "np.savez_compressed(d + '/np_z.npz', a=a, b=a.astype(np.int32), c=np.float16(1.5))\n"
                 "np.savez(d + '/np_s.npz', a, x=a[:, 1])\n") == 0);
  const std::vector<double> want = [] {
    std::vector<double> v;
    for (int i = 0; i < 24; ++i) v.push_back(i * 0.5 - 3);
    return v;
  }();
  auto values = [](const Array& a) { return a.astype(DType::f64).to_vector<double>(); };
  const Array c = aj::load(d + "/np_c.npy");
  CHECK(c.dtype() == DType::f64);
  CHECK(c.shape() == aj::Shape{2, 3, 4});
  CHECK(values(c) == want);
  CHECK(values(aj::load(d + "/np_f.npy")) == want);  // Fortran order, transposed back
  const Array be = aj::load(d + "/np_be.npy");      // big-endian f32, swapped
  CHECK(be.dtype() == DType::f32);
  CHECK(values(be) == want);
  CHECK(aj::load(d + "/np_bool.npy").dtype() == DType::bool_);
  CHECK(aj::sum(aj::load(d + "/np_bool.npy")).item<std::int64_t>() == 17);
  // The integers of every width, big-endian ones swapped (NumPy truncates toward zero).
  std::vector<double> truncated, shifted;
  for (double x : want) truncated.push_back(std::trunc(x)), shifted.push_back(std::trunc(x + 3));
  const Array i8 = aj::load(d + "/np_i8.npy"), u2 = aj::load(d + "/np_u2be.npy");
  CHECK(i8.dtype() == DType::i8);
  CHECK(values(i8) == truncated);
  CHECK(u2.dtype() == DType::u16);
  CHECK(values(u2) == shifted);
  try {
    (void)aj::load(d + "/np_c8.npy");
    FAIL("read complex64");
  } catch (const aj::Error& e) {
    CHECK(std::string(e.what()).find("'<c8' has no arrayjit dtype") != std::string::npos);
  }
  auto z = aj::load_npz(d + "/np_z.npz");  // deflated members
  CHECK(values(z.at("a")) == want);
  CHECK(z.at("b").dtype() == DType::i32);
  CHECK(z.at("c").dtype() == DType::f16);
  CHECK(z.at("c").item<float>() == 1.5f);
  auto s = aj::load_npz(d + "/np_s.npz");  // stored members, a positional one
  CHECK(values(s.at("arr_0")) == want);
  CHECK(s.at("x").shape() == aj::Shape{2, 4});

  // Ours in NumPy: values, dtypes and shapes as written.
  const Array a = random_of(DType::f32, {3, 4}, 7), b = random_of(DType::i64, {5}, 8), f = random_of(DType::f16, {2, 2}, 9);
  aj::save(d + "/aj_a.npy", a);
  aj::savez(d + "/aj.npz", {{"a", a}, {"b", b}, {"f", f}, {"m", (a > 0).eval()}});
  const auto list = [](const Array& x) {
    std::string o = "[";
    for (double v : x.astype(DType::f64).to_vector<double>()) o += std::to_string(v) + ",";
    return o + "]";
  };
  CHECK(python("import numpy as np\n"
               "d = '" + d + "'\n"
               "a = np.load(d + '/aj_a.npy')\n"
               "assert a.dtype == np.float32 and a.shape == (3, 4), (a.dtype, a.shape)\n"
               "assert np.allclose(a.ravel(), np.array(" + list(a) + "), rtol=1e-6, atol=1e-5)\n"
               "z = np.load(d + '/aj.npz')\n"
               "assert sorted(z.files) == ['a', 'b', 'f', 'm'], z.files\n"
               "assert z['b'].dtype == np.int64 and list(z['b']) == " + list(b) + "\n"
               "assert z['f'].dtype == np.float16 and z['m'].dtype == np.bool_\n"
               "assert (z['m'] == (a > 0)).all()\n") == 0);
}

TEST_CASE("io: bad files and bad requests are errors naming the file, creating nothing") {
  auto expect = [](auto&& f, const std::string& part) {
    try {
      f();
      FAIL("no error; expected: " << part);
    } catch (const aj::Error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(part) != std::string::npos, e.what());
    }
  };
  const std::string missing = tmp_path("nope.npy");
  expect([&] { (void)aj::load(missing); }, "nope.npy' is not a file that exists");
  const std::string junk = tmp_path("junk.npy");
  std::ofstream(junk) << "hello, not numpy";
  expect([&] { (void)aj::load(junk); }, "is not a .npy file");
  expect([&] { (void)aj::load_npz(junk); }, "is not a zip (.npz) archive");
  expect([&] { (void)aj::load_safetensors(junk); }, "is not a safetensors file");
  // Truncated data: a header that promises more than the file has.
  const Array a = random_of(DType::f64, {10, 10}, 3);
  const std::string full = tmp_path("full.npy");
  aj::save(full, a);
  const auto size = std::filesystem::file_size(full);
  std::filesystem::copy_file(full, tmp_path("cut.npy"), std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(tmp_path("cut.npy"), size - 8);
  expect([&] { (void)aj::load(tmp_path("cut.npy")); }, "truncated: 792 bytes of data, 800 expected");
  // A corrupt .npz member fails its CRC.
  aj::savez(tmp_path("c.npz"), {{"a", a}});
  {
    std::fstream f(tmp_path("c.npz"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x7f');
  }
  expect([&] { (void)aj::load_npz(tmp_path("c.npz")); }, "CRC-32 does not match");
  // safetensors: offsets that do not fit, a header that is not JSON.
  auto raw = [](const std::string& path, const std::string& header, std::size_t data) {
    std::string s;
    for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
    s += header + std::string(data, '\0');
    std::ofstream(path, std::ios::binary) << s;
  };
  raw(tmp_path("bad1.safetensors"), R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}})", 16);
  expect([&] { (void)aj::load_safetensors(tmp_path("bad1.safetensors")); }, "data_offsets [0, 8] do not hold 4 f32");
  raw(tmp_path("bad2.safetensors"), R"({"w":{"dtype":"F32",)", 0);
  expect([&] { (void)aj::load_safetensors(tmp_path("bad2.safetensors")); }, "is not valid JSON");
  raw(tmp_path("bad3.safetensors"), R"({"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", 2);
  expect([&] { (void)aj::load_safetensors(tmp_path("bad3.safetensors")); }, "dtype F8_E4M3 has no arrayjit dtype");
  // bf16 has no NumPy type; names must be unique; a failed save leaves no file.
  const std::string never = tmp_path("never.npy");
  expect([&] { aj::save(never, random_of(DType::bf16, {3}, 1)); }, "bf16 has no NumPy type");
  CHECK_FALSE(std::filesystem::exists(never));
  expect([&] { aj::savez(tmp_path("dup.npz"), {{"a", a}, {"a", a}}); }, "the name 'a' twice");
  CHECK_FALSE(std::filesystem::exists(tmp_path("dup.npz")));
  expect([&] { aj::save(tmp_path("no/such/dir/x.npy"), a); }, "cannot open");
}

TEST_CASE("io: loading borrows the file's mapping, which lives as long as an array uses it") {
  const std::int64_t n = 1 << 20;
  const Array a = random_of(DType::f32, {n / 256, 256}, 11);
  const std::string p = tmp_path("big.npy");
  aj::save(p, a);
  const std::vector<float> want = a.to_vector<float>();
  aj::reset_stats();
  const std::uint64_t before = aj::stats().bytes_allocated;
  Array loaded = aj::load(p);
  // Nothing read or copied: no buffer was allocated for its 4 MiB.
  CHECK(aj::stats().bytes_allocated - before < 4096);
  CHECK(loaded.is_evaluated());
  CHECK(mapped(p));
  // A view of it keeps the mapping; the file may even be unlinked.
  Array row = aj::slice(loaded, 0, 3, 4);
  loaded = Array();
  std::filesystem::remove(p);
  CHECK(row.to_vector<float>() == std::vector<float>(want.begin() + 3 * 256, want.begin() + 4 * 256));
  const std::string canon_dir = std::filesystem::canonical(std::filesystem::path(p).parent_path()).string();
  auto still_mapped = [&] {
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) {
      if (line.find(canon_dir + "/big.npy") != std::string::npos) return true;
    }
    return false;
  };
  CHECK(still_mapped());
  row = Array();
  CHECK_FALSE(still_mapped());

  // A borrowed array is an input like any other, and is never written in
  // place: the file keeps its values after arithmetic on the array.
  aj::save(p, a);
  {
    Array w = aj::load(p);
    w = (w * 2 + 1).eval();
    CHECK(w.to_vector<float>()[5] == want[5] * 2 + 1);
  }
  CHECK(aj::load(p).to_vector<float>() == want);
  // The same for safetensors and stored .npz members.
  aj::save_safetensors(tmp_path("big.safetensors"), {{"a", a}, {"b", (a > 0).eval()}});
  aj::savez(tmp_path("big.npz"), {{"a", a}});
  const std::uint64_t before2 = aj::stats().bytes_allocated;
  {
    auto st = aj::load_safetensors(tmp_path("big.safetensors"));
    auto z = aj::load_npz(tmp_path("big.npz"));
    CHECK(aj::stats().bytes_allocated - before2 < 4096);
    CHECK(mapped(tmp_path("big.safetensors")));
    CHECK(mapped(tmp_path("big.npz")));
    CHECK(st.at("a").to_vector<float>() == want);
    CHECK(z.at("a").to_vector<float>() == want);
    CHECK(aj::sum(st.at("b")).item<std::int64_t>() == aj::sum(a > 0).item<std::int64_t>());
  }
  CHECK_FALSE(mapped(tmp_path("big.safetensors")));
  CHECK_FALSE(mapped(tmp_path("big.npz")));
}

TEST_CASE("io: saving writes a column-major buffer as Fortran order, compressed .npz, Zip64") {
  const Array m = random_of(DType::f64, {5, 7}, 21);
  const Array mt = m.T();  // column-major view of an evaluated buffer
  {  // Saving an evaluated buffer allocates nothing (no copy of its values).
    const Array big = random_of(DType::f32, {512, 512}, 22);
    const aj::Stats before = aj::stats();
    (void)aj_test_largest_new_since_last_call();
    aj::save(tmp_path("nocopy.npy"), big);
    aj::save(tmp_path("nocopyT.npy"), big.T());
    aj::savez(tmp_path("nocopy.npz"), {{"a", big}, {"t", big.T()}});
    aj::save_safetensors(tmp_path("nocopy.safetensors"), {{"a", big}});
    CHECK(aj_test_largest_new_since_last_call() < 65536);  // the 1 MiB buffer was not copied
    CHECK(aj::stats().bytes_allocated == before.bytes_allocated);
    CHECK(aj::stats().pool_hits == before.pool_hits);
    // A view that is neither row- nor column-major is gathered once.
    aj::save(tmp_path("gathered.npy"), aj::slice(big, 1, 0, 512, 2));
    CHECK(aj_test_largest_new_since_last_call() >= 512 * 256 * 4);
  }
  aj::save(tmp_path("f.npy"), mt);
  CHECK(file_bytes(tmp_path("f.npy")).find("'fortran_order': True") != std::string::npos);
  check_same(aj::load(tmp_path("f.npy")), mt.eval(), "column-major");
  // savez_compressed: deflated members, smaller for compressible data.
  const Array zeros = aj::zeros({64, 64}, DType::f32);
  aj::savez_compressed(tmp_path("z.npz"), {{"z", zeros}, {"m", m}, {"t", mt}});
  aj::savez(tmp_path("s.npz"), {{"z", zeros}, {"m", m}, {"t", mt}});
  CHECK(std::filesystem::file_size(tmp_path("z.npz")) < std::filesystem::file_size(tmp_path("s.npz")) / 2);
  auto z = aj::load_npz(tmp_path("z.npz"));
  check_same(z.at("z"), zeros, "deflated zeros");
  check_same(z.at("m"), m, "deflated m");
  check_same(z.at("t"), mt.eval(), "deflated column-major");
  // Zip64 fields everywhere (the limit lowered to 16 bytes).
  const std::uint64_t old = aj::detail::set_zip64_limit(16);
  aj::savez(tmp_path("z64.npz"), {{"m", m}, {"z", zeros}});
  aj::savez_compressed(tmp_path("z64c.npz"), {{"m", m}, {"z", zeros}});
  aj::detail::set_zip64_limit(old);
  for (const char* f : {"z64.npz", "z64c.npz"}) {
    auto r = aj::load_npz(tmp_path(f));
    check_same(r.at("m"), m, std::string(f) + " m");
    check_same(r.at("z"), zeros, std::string(f) + " z");
  }
  if (!have_numpy()) {
    MESSAGE("no /usr/bin/python3 with numpy: NumPy's side skipped");
    return;
  }
  const std::string d = std::filesystem::path(tmp_path("x")).parent_path().string();
  CHECK_MESSAGE(python("import numpy as np, zipfile\n"
                       "d = '" + d + "'\n"
                       "f = np.load(d + '/f.npy')\n"
                       "assert f.shape == (7, 5) and f.flags.f_contiguous, (f.shape, f.flags)\n"
                       "for name in ['z.npz', 'z64.npz', 'z64c.npz']:\n"
                       "    z = np.load(d + '/' + name)\n"
                       "    assert (z['z'] == 0).all() and z['z'].shape == (64, 64)\n"
                       "    assert z['m'].shape == (5, 7)\n"
                       "    assert zipfile.ZipFile(d + '/' + name).testzip() is None\n"
                       "assert (np.load(d + '/z.npz')['t'] == f).all()\n"
                       "i = zipfile.ZipFile(d + '/z.npz').infolist()\n"
                       "assert all(x.compress_type == zipfile.ZIP_DEFLATED for x in i)\n"
                       "# NumPy's own Zip64 archive: every record in its Zip64 form\n"
                       "zipfile.ZIP64_LIMIT = 8\n"
                       "np.savez(d + '/np64.npz', a=np.arange(10.0), b=np.ones((3, 2), np.int32))\n") == 0,
                python_output());
  auto r = aj::load_npz(d + "/np64.npz");
  CHECK(r.at("a").to_vector<double>() == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(r.at("b").shape() == aj::Shape{3, 2});
}

TEST_CASE("io: every dtype and size-0 arrays cross to NumPy and back; a reference-layout safetensors file") {
  if (!have_numpy()) {
    MESSAGE("no /usr/bin/python3 with numpy: skipped");
    return;
  }
  const std::string d = std::filesystem::path(tmp_path("x")).parent_path().string();
  // NumPy writes every dtype arrayjit has, in C and Fortran order, and empty arrays.
  REQUIRE_MESSAGE(python("import numpy as np\n"
                         "d = '" + d + "'\n"
                         "rng = np.random.default_rng(5)\n"
                         "x = rng.normal(size=(3, 4)) * 50\n"
                         "arrs = {'b': x > 0, 'i4': x.astype('<i4'), 'i8': x.astype('<i8'), 'f2': x.astype('<f2'),\n"
                         "        'f4': x.astype('<f4'), 'f8': x, 'e0': np.zeros((0, 3), np.float32), 'e1': np.zeros((2, 0), np.int64)}\n"
                         "for k, v in arrs.items():\n"
                         "    np.save(d + '/np_' + k + '.npy', v)\n"
                         "    np.save(d + '/npF_' + k + '.npy', np.asfortranarray(v))\n"
                         "    with open(d + '/np_' + k + '.txt', 'w') as f: f.write(' '.join(repr(float(e)) for e in v.ravel()))\n"
                         "np.savez_compressed(d + '/np_all.npz', **arrs)\n"
                         "# a .npy of format 3.0 (a utf-8 header)\n"
                         "np.lib.format.write_array(open(d + '/np_v3.npy', 'wb'), x, version=(3, 0))\n") == 0,
                  python_output());
  auto text_values = [&](const std::string& k) {
    std::ifstream in(d + "/np_" + k + ".txt");
    std::vector<double> v;
    for (double e; in >> e;) v.push_back(e);
    return v;
  };
  const std::map<std::string, DType> dtypes = {{"b", DType::bool_}, {"i4", DType::i32}, {"i8", DType::i64}, {"f2", DType::f16},
                                               {"f4", DType::f32},  {"f8", DType::f64},  {"e0", DType::f32}, {"e1", DType::i64}};
  auto all = aj::load_npz(d + "/np_all.npz");
  for (const auto& [k, t] : dtypes) {
    CAPTURE(k);
    for (const Array& a : {aj::load(d + "/np_" + k + ".npy"), aj::load(d + "/npF_" + k + ".npy"), all.at(k)}) {
      CHECK(a.dtype() == t);
      CHECK(a.astype(DType::f64).to_vector<double>() == text_values(k));
    }
  }
  CHECK(aj::load(d + "/np_v3.npy").astype(DType::f64).to_vector<double>() == text_values("f8"));

  // Ours, every dtype NumPy has and size-0 arrays, read by NumPy bit for bit.
  std::vector<std::pair<std::string, Array>> ours;
  for (const auto& [k, t] : dtypes) {
    const Array a = k[0] == 'e' ? aj::zeros(k == "e0" ? aj::Shape{0, 3} : aj::Shape{2, 0}, t) : aj::load(d + "/np_" + k + ".npy");
    ours.emplace_back(k, a);
    aj::save(d + "/aj_" + k + ".npy", a);
  }
  aj::savez(d + "/aj_all.npz", ours);
  aj::savez_compressed(d + "/aj_allz.npz", ours);
  CHECK_MESSAGE(python("import numpy as np\n"
                       "d = '" + d + "'\n"
                       "ks = ['b', 'i4', 'i8', 'f2', 'f4', 'f8', 'e0', 'e1']\n"
                       "z, zc = np.load(d + '/aj_all.npz'), np.load(d + '/aj_allz.npz')\n"
                       "for k in ks:\n"
                       "    want = np.load(d + '/np_' + k + '.npy')\n"
                       "    for got in (np.load(d + '/aj_' + k + '.npy'), z[k], zc[k]):\n"
                       "        assert got.dtype == want.dtype and got.shape == want.shape, (k, got.dtype, got.shape)\n"
                       "        assert got.tobytes() == want.tobytes(), k\n") == 0,
                python_output());

  // safetensors laid out as the reference writer does it (tensors sorted by
  // dtype alignment, then name; the header padded with spaces to 8 bytes),
  // written here byte by byte; loaded with equal bytes.
  REQUIRE_MESSAGE(python("import numpy as np, json, struct\n"
                         "d = '" + d + "'\n"
                         "rng = np.random.default_rng(9)\n"
                         "ts = {'emb.weight': rng.normal(size=(5, 3)).astype('<f4'), 'ln.bias': rng.normal(size=4).astype('<f2'),\n"
                         "      'step': np.array(7, '<i8'), 'mask': rng.normal(size=6) > 0, 'w': rng.normal(size=(2, 2))}\n"
                         "order = sorted(ts, key=lambda k: (-ts[k].dtype.itemsize, k))\n"
                         "code = {'f4': 'F32', 'f2': 'F16', 'i8': 'I64', 'b1': 'BOOL', 'f8': 'F64'}\n"
                         "h, data = {'__metadata__': {'format': 'pt'}}, b''\n"
                         "for k in order:\n"
                         "    b = ts[k].tobytes()\n"
                         "    h[k] = {'dtype': code[ts[k].dtype.str[1:]], 'shape': list(ts[k].shape), 'data_offsets': [len(data), len(data) + len(b)]}\n"
                         "    data += b\n"
                         "hb = json.dumps(h, separators=(',', ':')).encode()\n"
                         "hb += b' ' * ((8 - len(hb) % 8) % 8)\n"
                         "open(d + '/ref.safetensors', 'wb').write(struct.pack('<Q', len(hb)) + hb + data)\n"
                         "for k in ts: open(d + '/ref_' + k + '.bin', 'wb').write(ts[k].tobytes())\n") == 0,
                  python_output());
  auto st = aj::load_safetensors(d + "/ref.safetensors");
  CHECK(st.size() == 5);
  CHECK(aj::safetensors_metadata(d + "/ref.safetensors").at("format") == "pt");
  for (const auto& [k, a] : st) {
    CAPTURE(k);
    const std::string want = file_bytes(d + "/ref_" + k + ".bin");
    std::string got(want.size(), '\0');
    REQUIRE(static_cast<std::size_t>(a.size()) * aj::itemsize(a.dtype()) == want.size());
    a.copy_to(got.data());
    CHECK(got == want);
  }
  CHECK(st.at("step").ndim() == 0);
  CHECK(st.at("mask").dtype() == DType::bool_);
}

TEST_CASE("io: files that lie are errors naming the file and what is wrong, never a read outside it") {
  const Array a = random_of(DType::f32, {4, 4}, 31);
  auto raw = [](const std::string& path, const std::string& header, std::size_t data) {
    std::string s;
    for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
    s += header + std::string(data, '\0');
    std::ofstream(path, std::ios::binary) << s;
  };
  auto st = [&](const std::string& header, std::size_t data) {
    raw(tmp_path("lie.safetensors"), header, data);
    return [] { (void)aj::load_safetensors(tmp_path("lie.safetensors")); };
  };
  expect_error(st(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12),
               "tensor 'b' [4, 12) overlaps 'a' [0, 8)");
  expect_error(st(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "4 bytes before tensor 'a' belong to no tensor");
  expect_error(st(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 12), "8 bytes after the last tensor");
  expect_error(st(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8), "data_offsets [0, 16] do not hold 4 f32");
  expect_error(st(R"({"a":{"dtype":"F32","shape":[100000000000000000,100],"data_offsets":[0,16]}})", 16), "byte size overflows");
  expect_error(st(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", 0), "negative extent");
  expect_error(st(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
               "the key \"a\" twice");
  expect_error(st(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,"4"]}})", 4), "needs dtype, shape and data_offsets");
  expect_error(st(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}, "x": "\uZZZZ"})", 4), "a bad \\u escape");
  expect_error(st(R"({"__metadata__":{"k":1}})", 0), "metadata 'k' is not a string");
  {  // a header size past the end of the file
    std::string s(8, '\0');
    s[0] = 100;
    std::ofstream(tmp_path("lie.safetensors"), std::ios::binary) << s << "{}";
    expect_error([] { (void)aj::load_safetensors(tmp_path("lie.safetensors")); }, "a header size of 100 bytes");
  }
  // .npy headers that lie.
  auto npy = [](const std::string& dict, std::size_t data, int major = 1) {
    std::string s("\x93NUMPY", 6);
    s.push_back(static_cast<char>(major));
    s.push_back('\0');
    const std::size_t len = dict.size();
    s.push_back(static_cast<char>(len & 0xff));
    s.push_back(static_cast<char>(len >> 8));
    if (major > 1) s += std::string(2, '\0');
    s += dict + std::string(data, '\0');
    std::ofstream(tmp_path("lie.npy"), std::ios::binary) << s;
    return [] { (void)aj::load(tmp_path("lie.npy")); };
  };
  expect_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8), "truncated: 8 bytes of data, 12 expected");
  expect_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000000000, 100), }", 8), "byte size overflows");
  expect_error(npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", 12), "a structured NumPy type");
  expect_error(npy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3,), }", 12), "the header does not parse");
  expect_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 12, 9), "format version 9 is not known");
  {  // a header length past the end of the file
    std::string s("\x93NUMPY\x01\x00\xff\xff{}", 12);
    std::ofstream(tmp_path("lie.npy"), std::ios::binary) << s;
    expect_error([] { (void)aj::load(tmp_path("lie.npy")); }, "truncated header (65535 bytes promised)");
  }
  // Wrong formats name the right function.
  aj::savez(tmp_path("right.npz"), {{"a", a}});
  aj::save(tmp_path("right.npy"), a);
  aj::save_safetensors(tmp_path("right.safetensors"), {{"a", a}});
  expect_error([] { (void)aj::load(tmp_path("right.npz")); }, "read it with load_npz");
  expect_error([] { (void)aj::load(tmp_path("right.safetensors")); }, "read it with load_safetensors");
  expect_error([] { (void)aj::load_npz(tmp_path("right.npy")); }, "it is a .npy file: read it with load");
  expect_error([] { (void)aj::load_safetensors(tmp_path("right.npy")); }, "it is a .npy file");
  expect_error([] { (void)aj::load(std::filesystem::temp_directory_path().string()); }, "is not a regular file");
  // .npz archives that lie: a member past the end, truncated data, a
  // central directory past the end, deflated data that does not inflate.
  const std::string good = file_bytes(tmp_path("right.npz"));
  auto npz = [](std::string bytes) {
    std::ofstream(tmp_path("lie.npz"), std::ios::binary) << bytes;
    return [] { (void)aj::load_npz(tmp_path("lie.npz")); };
  };
  auto put32 = [](std::string& s, std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) s[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  const std::size_t eocd = good.rfind(std::string("PK\x05\x06", 4)), cd = good.rfind(std::string("PK\x01\x02", 4));
  REQUIRE(eocd != std::string::npos);
  REQUIRE(cd != std::string::npos);
  {
    std::string s = good;
    put32(s, cd + 42, 0x7fff0000u);  // the member's local header offset
    expect_error(npz(s), "member 'a.npy': a broken local header");
  }
  {
    std::string s = good;
    put32(s, cd + 20, 0x7fff0000u);  // compressed size
    put32(s, cd + 24, 0x7fff0000u);
    expect_error(npz(s), "member 'a.npy' is truncated");
  }
  {
    std::string s = good;
    put32(s, eocd + 16, 0x7fff0000u);  // central directory offset
    expect_error(npz(s), "truncated central directory");
  }
  {
    std::string s = good;
    put32(s, eocd + 16, 0xffffffffu);  // a Zip64 marker with no Zip64 record
    expect_error(npz(s), "a Zip64 archive without its locator");
  }
  aj::savez_compressed(tmp_path("rightc.npz"), {{"a", a}});
  {
    std::string s = file_bytes(tmp_path("rightc.npz"));
    const std::size_t c2 = s.rfind(std::string("PK\x01\x02", 4));
    put32(s, c2 + 24, 9999);  // the uncompressed size lies
    expect_error(npz(s), "does not inflate to 9999 bytes");
    put32(s, c2 + 24, 0xfffffff0u);  // a size no deflate stream of this length makes (never allocated)
    expect_error(npz(s), "more than deflate makes of");
  }
  CHECK_FALSE(std::filesystem::exists(tmp_path("lie.npz.aj-tmp")));
}

TEST_CASE("io: the C functions save and load named arrays, with the sizing convention") {
  const Array w = random_of(DType::f32, {3, 4}, 41), b = random_of(DType::i64, {5}, 42);
  const std::vector<float> wv = w.to_vector<float>();
  aj_array hw{}, hb{};
  REQUIRE(aj_array_from_data(wv.data(), AJ_F32, std::vector<std::int64_t>{3, 4}.data(), 2, &hw) == AJ_OK);
  const std::vector<std::int64_t> bv = b.to_vector<std::int64_t>();
  REQUIRE(aj_array_from_data(bv.data(), AJ_I64, std::vector<std::int64_t>{5}.data(), 1, &hb) == AJ_OK);
  const std::size_t handles = aj_live_handles();
  const std::string npy = tmp_path("c.npy"), npz = tmp_path("cz.npz"), stp = tmp_path("c.safetensors");
  CHECK(aj_save(npy.c_str(), hw) == AJ_OK);
  aj_array back{};
  REQUIRE(aj_load(npy.c_str(), &back) == AJ_OK);
  std::vector<float> got(12);
  REQUIRE(aj_array_read(back, AJ_F32, got.data(), got.size() * 4, nullptr) == AJ_OK);
  CHECK(got == wv);
  CHECK(aj_array_release(back) == AJ_OK);

  const char* names[] = {"weight", "bias"};
  const aj_array arrays[] = {hw, hb};
  for (int compressed = 0; compressed < 2; ++compressed) {
    CHECK((compressed ? aj_savez_compressed : aj_savez)(npz.c_str(), names, arrays, 2) == AJ_OK);
    std::size_t count = 0, len = 0;
    REQUIRE(aj_load_npz(npz.c_str(), nullptr, 0, &count, nullptr, 0, &len) == AJ_OK);
    CHECK(count == 2);
    CHECK(len == std::string("bias").size() + 1 + std::string("weight").size() + 1);
    CHECK(aj_live_handles() == handles);
    std::vector<aj_array> out(2);
    std::vector<char> buf(len);
    // Too little room: nothing made, an error saying so.
    CHECK(aj_load_npz(npz.c_str(), out.data(), 1, &count, buf.data(), len, &len) == AJ_ERROR_USER);
    CHECK(std::string(aj_last_error()).find("room for 1 arrays") != std::string::npos);
    CHECK(AJ_IS_NULL(out[0]));
    CHECK(aj_live_handles() == handles);
    REQUIRE(aj_load_npz(npz.c_str(), out.data(), 2, &count, buf.data(), len, &len) == AJ_OK);
    CHECK(std::string(buf.data()) == "bias");  // name order
    CHECK(std::string(buf.data() + 5) == "weight");
    std::vector<std::int64_t> bg(5);
    REQUIRE(aj_array_read(out[0], AJ_I64, bg.data(), bg.size() * 8, nullptr) == AJ_OK);
    CHECK(bg == bv);
    for (aj_array h : out) CHECK(aj_array_release(h) == AJ_OK);
  }
  const char* keys[] = {"format", "epoch"};
  const char* values[] = {"pt", "3"};
  CHECK(aj_save_safetensors(stp.c_str(), names, arrays, 2, keys, values, 2) == AJ_OK);
  std::size_t count = 0, len = 0;
  REQUIRE(aj_load_safetensors(stp.c_str(), nullptr, 0, &count, nullptr, 0, &len) == AJ_OK);
  std::vector<aj_array> out(count);
  std::vector<char> buf(len);
  REQUIRE(aj_load_safetensors(stp.c_str(), out.data(), count, &count, buf.data(), len, &len) == AJ_OK);
  REQUIRE(aj_array_read(out[1], AJ_F32, got.data(), got.size() * 4, nullptr) == AJ_OK);
  CHECK(got == wv);
  for (aj_array h : out) CHECK(aj_array_release(h) == AJ_OK);
  std::size_t mlen = 0;
  REQUIRE(aj_safetensors_metadata(stp.c_str(), nullptr, 0, &mlen) == AJ_OK);
  std::vector<char> meta(mlen + 1);
  REQUIRE(aj_safetensors_metadata(stp.c_str(), meta.data(), meta.size(), &mlen) == AJ_OK);
  const char want_meta[] = "epoch\0" "3\0" "format\0" "pt";  // and the final NUL
  CHECK(std::string(meta.data(), mlen) == std::string(want_meta, sizeof want_meta));
  // Bad calls: errors naming what is wrong, nothing made.
  CHECK(aj_load(nullptr, &back) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()) == "aj_load: null path");
  CHECK(aj_load(tmp_path("none.npy").c_str(), &back) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("none.npy' is not a file that exists") != std::string::npos);
  CHECK(AJ_IS_NULL(back));
  const char* dup[] = {"a", "a"};
  CHECK(aj_savez(npz.c_str(), dup, arrays, 2) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("the name 'a' twice") != std::string::npos);
  const char* dupk[] = {"k", "k"};
  CHECK(aj_save_safetensors(stp.c_str(), names, arrays, 2, dupk, values, 2) == AJ_ERROR_USER);
  CHECK(std::string(aj_last_error()).find("the metadata key 'k' twice") != std::string::npos);
  CHECK(aj_live_handles() == handles);
  aj_array_release(hw);
  aj_array_release(hb);
}
