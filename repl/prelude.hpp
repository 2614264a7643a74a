// The C++ the interpreter holds before the first prompt: arrayjit, `using
// namespace aj;`, and the helpers the REPL's generated code calls (ajrepl::show
// prints a bare expression's value, time_it runs %time, write_text %dot).
// Interpreted code, not compiled into the REPL: the build precompiles it
// (prelude.pch, with its inline functions compiled into the executable), and
// the REPL parses its text instead where that header cannot be used.
#include <arrayjit/arrayjit.hpp>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <time.h>
#include <vector>
using namespace aj;

namespace ajrepl {

// libstdc++'s reference counting (a std::shared_ptr copied or released, so
// also a copy of an aj::compile function) calls these always_inline
// functions. The precompiled prelude's object file, which interpreted code
// takes the prelude's inline functions from, inlined them and kept no copy,
// so `auto p2 = p;` failed with "Symbols not found: __atomic_add_dispatch".
// Their addresses make it keep one.
[[gnu::used]] inline void (*const keep_atomic_add)(_Atomic_word*, int) = &__gnu_cxx::__atomic_add_dispatch;
[[gnu::used]] inline _Atomic_word (*const keep_exchange_and_add)(_Atomic_word*, int) =
    &__gnu_cxx::__exchange_and_add_dispatch;

// `show((EXPR, ajrepl::nothing))` prints EXPR's value, or nothing when EXPR
// is void: the comma below only applies to a value (a void operand takes the
// built-in comma, whose result is `nothing`).
struct Nothing {};
inline constexpr Nothing nothing{};
template <class T>
struct Held { T&& value; };
template <class T>
Held<T> operator,(T&& v, Nothing) { return {static_cast<T&&>(v)}; }

// Floats as Python writes them: the shortest text that reads back the same,
// with ".0" on integral values so that a float never looks like an int.
template <class F>
void put_float(std::ostream& os, F v) {
  char buf[64];
  auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  std::string_view s(buf, static_cast<std::size_t>(end - buf));
  os << s;
  if (s.find_first_not_of("-0123456789") == std::string_view::npos) os << ".0";
}

template <class T>
void put(std::ostream& os, const T& v);

template <class T>
void put_list(std::ostream& os, const std::vector<T>& v) {
  os << '[';
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) os << ", ";
    put(os, static_cast<const T&>(v[i]));
  }
  os << ']';
}

template <class T>
void put(std::ostream& os, const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    os << (v ? "true" : "false");
  } else if constexpr (std::is_floating_point_v<T>) {
    put_float(os, v);
  } else if constexpr (std::is_same_v<T, signed char> || std::is_same_v<T, unsigned char>) {
    os << static_cast<int>(v);  // int8_t / uint8_t are numbers here, not characters
  } else if constexpr (requires { put_list(os, v); }) {
    put_list(os, v);
  } else if constexpr (requires { os << v; }) {
    os << v;
  } else {
    std::string_view f = __PRETTY_FUNCTION__;  // "... [T = type]"
    auto at = f.find("T = ");
    os << '<' << f.substr(at + 4, f.rfind(']') - at - 4) << " object>";
  }
}

template <class T>
void show(Held<T> h) {
  put(std::cout, static_cast<const std::remove_reference_t<T>&>(h.value));
  std::cout << '\n';
}
inline void show(Nothing) {}

// %time: runs f once, evaluating an Array result so that the lazy work is
// inside the timing, then prints the times and the value. Kernels the run
// compiles (or loads from the disk cache) for the first time are not
// counted: that is paid once per kernel structure, and a small expression's
// first run would show 15 ms of LLVM for 0.1 ms of work. The JIT clocks
// each compile on the thread that runs it (aj::stats().compile_ns and
// kernel_disk_load_ns): that time is taken from the times and said. Where
// kernels were compiled ahead on several threads at once, the sum of their
// compile times is not time the run waited: then it stays counted, and the
// note says so.
inline double clock_s(clockid_t id) {
  timespec t;
  clock_gettime(id, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
inline void put_seconds(double s) {
  const char* unit = "s";
  if (s < 1e-6) s *= 1e9, unit = "ns";
  else if (s < 1e-3) s *= 1e6, unit = "\u00b5s";
  else if (s < 1) s *= 1e3, unit = "ms";
  std::printf("%.3g %s", s, unit);
}
struct Timer {
  aj::Stats before = aj::stats();
  double wall = clock_s(CLOCK_MONOTONIC), cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  void report() const {
    double w = clock_s(CLOCK_MONOTONIC) - wall, c = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu;
    const aj::Stats after = aj::stats();
    std::uint64_t kernels = 0, ns = 0;
    bool ahead = false;
    if (after.kernels_compiled >= before.kernels_compiled && after.kernel_disk_hits >= before.kernel_disk_hits &&
        after.compile_ns >= before.compile_ns && after.kernel_disk_load_ns >= before.kernel_disk_load_ns) {  // (no reset_stats() inside)
      kernels = (after.kernels_compiled - before.kernels_compiled) + (after.kernel_disk_hits - before.kernel_disk_hits);
      ns = (after.compile_ns - before.compile_ns) + (after.kernel_disk_load_ns - before.kernel_disk_load_ns);
      ahead = after.kernels_compiled_ahead != before.kernels_compiled_ahead;
    }
    const double jit = 1e-9 * static_cast<double>(ns);
    if (kernels && !ahead && w > 0) {
      // The JIT's clock is a wall clock (a compile that writes the disk
      // cache waits for it too): its CPU time is taken at the run's rate.
      const double rate = c / w < 1 ? c / w : 1;
      c = c > jit * rate ? c - jit * rate : 0;
      w = w > jit ? w - jit : 0;
    }
    std::cout << std::flush;
    std::printf("CPU time: ");
    put_seconds(c);
    std::printf(", Wall time: ");
    put_seconds(w);
    if (kernels) {
      std::printf(ahead ? " (counted: " : " (not counted: ");
      put_seconds(jit);
      std::printf(" compiling %llu new kernel%s%s)", static_cast<unsigned long long>(kernels), kernels > 1 ? "s" : "",
                  ahead ? ", on several threads at once" : "");
    }
    std::printf("\n");
    std::fflush(stdout);
  }
};
template <class T>
void force(const T& v) {
  if constexpr (std::is_same_v<T, aj::Array>) v.eval();
}
template <class F>
void time_it(F f) {
  Timer t;
  if constexpr (std::is_void_v<decltype(f())>) {
    f();
    t.report();
  } else {
    decltype(auto) v = f();
    force(v);
    t.report();
    put(std::cout, v);
    std::cout << '\n';
  }
}

// %profile: EXPR run (and evaluated) under an aj::profile; the table of its
// kernels, where the trace went, then the value.
template <class F>
void profile_it(F f, const char* path) {
  auto done = [&](aj::profile& p) {
    p.stop();
    std::cout << p.summary() << "wrote " << path
              << " (Chrome trace: open it in https://ui.perfetto.dev or chrome://tracing)\n";
  };
  if constexpr (std::is_void_v<decltype(f())>) {
    aj::profile p(path);
    f();
    done(p);
  } else {
    aj::profile p(path);
    decltype(auto) v = f();
    force(v);
    done(p);
    put(std::cout, v);
    std::cout << '\n';
  }
}

// %dot: the graph's text goes to a file the REPL then hands to Graphviz.
inline void write_text(const char* path, const std::string& text) {
  std::FILE* f = std::fopen(path, "w");
  if (!f) throw std::runtime_error(std::string("cannot write ") + path);
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

}  // namespace ajrepl
