// Saving and loading (arrayjit/io.hpp): round trips of every dtype through
// .npy, .npz and safetensors on random data; files NumPy writes (C and
// Fortran order, big-endian, savez_compressed) read right and files we write
// read right in NumPy; bad files are errors naming the file that create
// nothing.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>
#include <arrayjit/io.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

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
  return std::system(("/usr/bin/python3 " + script + " > /dev/null 2>&1").c_str());
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
  try {
    (void)aj::load(d + "/np_i8.npy");
    FAIL("read int8");
  } catch (const aj::Error& e) {
    CHECK(std::string(e.what()).find("'|i1' has no arrayjit dtype") != std::string::npos);
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
  raw(tmp_path("bad3.safetensors"), R"({"w":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", 2);
  expect([&] { (void)aj::load_safetensors(tmp_path("bad3.safetensors")); }, "dtype U8 has no arrayjit dtype");
  // bf16 has no NumPy type; names must be unique; a failed save leaves no file.
  const std::string never = tmp_path("never.npy");
  expect([&] { aj::save(never, random_of(DType::bf16, {3}, 1)); }, "bf16 has no NumPy type");
  CHECK_FALSE(std::filesystem::exists(never));
  expect([&] { aj::savez(tmp_path("dup.npz"), {{"a", a}, {"a", a}}); }, "the name 'a' twice");
  CHECK_FALSE(std::filesystem::exists(tmp_path("dup.npz")));
  expect([&] { aj::save(tmp_path("no/such/dir/x.npy"), a); }, "cannot open");
}
