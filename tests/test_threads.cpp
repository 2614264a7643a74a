// Threads (docs/semantics.md, "Threads"): many threads tracing, evaluating,
// reading out and destroying arrays at once must give exactly what one thread
// gives, and arrays may cross threads.
//
// Every result is compared bit for bit with the same work done on one thread
// first: the same program gives the same plan and the same kernels wherever
// it runs (split reductions depend only on the thread-count setting), so any
// difference is a race. `./dev test --tsan` runs these under ThreadSanitizer.
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "graph/graph.hpp"
#include "tests/random_data.hpp"
#include "tests/random_graph.hpp"

namespace {

using aj::Array;
using aj::DType;
using ajtest::RandomGraph;

// How hard the stress tests push: more under AJ_TEST_LONG=1.
bool long_mode() {
  const char* s = std::getenv("AJ_TEST_LONG");
  return s && *s && std::string(s) != "0";
}

// Everything a random program produced, as raw bits (exact comparison).
struct Result {
  std::vector<std::vector<double>> f;
  std::vector<std::vector<std::int64_t>> i;
  std::string error;
  bool operator==(const Result& o) const {
    if (error != o.error || i != o.i || f.size() != o.f.size()) return false;
    for (std::size_t k = 0; k < f.size(); ++k) {
      if (f[k].size() != o.f[k].size()) return false;
      if (!f[k].empty() && std::memcmp(f[k].data(), o.f[k].data(), f[k].size() * sizeof(double)) != 0) return false;
    }
    return true;
  }
};

// One random program (tests/random_graph.hpp: mid-program evals, rebinding
// and dropped handles, views, reductions, matmul, concatenate), its outputs
// evaluated together and read. The random state is seeded per program, so the
// values do not depend on what this thread made before.
Result run_program(std::uint64_t seed) {
  aj::random::seed(seed);
  Result r;
  RandomGraph g(seed);
  try {
    g.build();
    std::vector<Array> outs;
    for (auto& o : g.outputs()) outs.push_back(o.array);
    aj::eval(outs);
    for (auto& o : g.outputs()) {
      std::vector<double> f;
      std::vector<std::int64_t> i;
      RandomGraph::read(o.array, &f, &i);
      r.f.push_back(std::move(f));
      r.i.push_back(std::move(i));
    }
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

// Work on arrays another thread made and evaluated (read-only weights): the
// result depends on `k` only.
Array use_shared(const Array& w, const Array& b, int k) {
  Array x = aj::arange(0, 64, 1, DType::f32).reshape({1, 64}) * (0.25f * static_cast<float>(k % 7)) - 3.0f;
  return aj::tanh(aj::matmul(x, w) + b) * static_cast<float>(k % 5 + 1);
}

void expect_user_error(const std::function<void()>& f, const char* op) {
  try {
    f();
    FAIL("no error thrown for a bad " << op);
  } catch (const aj::Error& e) {
    CHECK(e.kind() == aj::Error::Kind::user);
    CHECK(std::string(e.what()).find(op) != std::string::npos);
    CHECK(std::string(e.what()).find("test_threads.cpp") != std::string::npos);
  }
}

}  // namespace

TEST_SUITE("threads") {

TEST_CASE("threads: 8 threads mixing random graphs, shared inputs, errors and handle drops match one thread") {
  const int kThreads = 8;
  const int per_thread = long_mode() ? 60 : 12;
  const int rounds = long_mode() ? 4 : 2;
  const std::uint64_t base = 0x7d5ea000;

  // Shared, evaluated, read-only inputs every thread uses.
  const std::vector<float> wv = ajtest::random_in<float>(64 * 32, 0x5a11, -0.2f, 0.2f);
  const std::vector<float> bv = ajtest::random_in<float>(32, 0x5a12, -1.0f, 1.0f);
  Array w = aj::from_vector(wv, aj::Shape{64, 32});
  Array b = (aj::from_vector(bv, aj::Shape{32}) * 0.5f).eval();

  // The same work on this thread first: the expected bits.
  std::map<std::uint64_t, Result> want;
  for (int t = 0; t < kThreads; ++t) {
    for (int k = 0; k < per_thread; ++k) {
      const std::uint64_t seed = base + static_cast<std::uint64_t>(t * per_thread + k);
      want[seed] = run_program(seed);
    }
  }
  std::vector<std::vector<float>> want_shared;
  for (int k = 0; k < 35; ++k) want_shared.push_back(use_shared(w, b, k).to_vector<float>());

  const aj::Stats before = aj::stats();
  std::atomic<int> mismatches{0}, checks{0}, errors{0};
  std::mutex msg_mu;
  std::string first_mismatch;
  auto mismatch = [&](const std::string& what) {
    mismatches.fetch_add(1);
    std::lock_guard lock(msg_mu);
    if (first_mismatch.empty()) first_mismatch = what;
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < rounds; ++round) {
        for (int k = 0; k < per_thread; ++k) {
          // Every thread walks its seeds in another order each round.
          const int kk = (k * (round + 1) + t) % per_thread;
          const std::uint64_t seed = base + static_cast<std::uint64_t>(t * per_thread + kk);
          if (!(run_program(seed) == want.at(seed))) mismatch("seed " + std::to_string(seed));
          checks.fetch_add(1);

          const int s = (t * 5 + k + round) % 35;
          Array y = use_shared(w, b, s);
          if (y.to_vector<float>() != want_shared[static_cast<std::size_t>(s)]) {
            mismatch("shared weights, k = " + std::to_string(s));
          }
          checks.fetch_add(1);

          if ((k + t) % 4 == 0) {  // a user error in the middle of the work loses nothing
            try {
              Array bad = aj::ones({3, 4}) + aj::ones({5});
              mismatch("no error for a bad broadcast");
            } catch (const aj::Error& e) {
              if (e.kind() != aj::Error::Kind::user || std::string(e.what()).find("test_threads.cpp") == std::string::npos) {
                mismatch(std::string("unexpected error: ") + e.what());
              }
              errors.fetch_add(1);
            }
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  INFO(first_mismatch);
  CHECK(mismatches.load() == 0);
  CHECK(checks.load() == kThreads * rounds * per_thread * 2);
  CHECK(errors.load() > 0);
  // Nothing leaked: every node the threads made is gone (their graphs too
  // hold nothing), and the shared inputs are intact.
  CHECK(aj::stats().live_nodes == before.live_nodes);
  CHECK(w.to_vector<float>() == wv);
}

TEST_CASE("threads: one evaluated array read by many threads at once") {
  const std::vector<double> v = ajtest::random_in<double>(10007, 0x0eadu, -5, 5);
  Array shared = (aj::from_vector(v) * 2.0).eval();
  double want_sum = 0;
  for (double x : v) want_sum += 2 * x;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 40; ++k) {
        switch ((k + t) % 5) {
          case 0: {
            const std::vector<double> r = shared.to_vector<double>();
            for (std::size_t i = 0; i < v.size(); i += 97) bad += r[i] != 2 * v[i];
            break;
          }
          case 1: {
            aj::ArrayData d = shared.data();
            bad += d.as<double>()[5] != 2 * v[5];
            break;
          }
          case 2: {
            std::vector<double> out(v.size());
            shared.copy_to(out.data());
            bad += out[100] != 2 * v[100];
            break;
          }
          case 3: {
            Array copy = shared;  // handles copied and dropped on every thread
            bad += copy.shape()[0] != static_cast<std::int64_t>(v.size()) || !copy.is_evaluated();
            break;
          }
          case 4: {
            const double s = aj::sum(shared).item<double>();  // an operand of another thread's graph
            bad += std::fabs(s - want_sum) > 1e-9 * std::fabs(want_sum) + 1e-9;
            break;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(bad.load() == 0);
  CHECK(shared.to_vector<double>()[7] == 2 * v[7]);
}

TEST_CASE("threads: an unevaluated array read by many threads at once is computed once") {
  const std::vector<float> v = ajtest::random_in<float>(4096, 0x1a27, -1.0f, 1.0f);
  Array x = aj::from_vector(v);
  Array lazy = aj::exp(x * 0.5f) + aj::sin(x) * 2.0f;  // one kernel, not evaluated yet
  std::vector<float> want(v.size());
  {
    Array again = aj::exp(aj::from_vector(v) * 0.5f) + aj::sin(aj::from_vector(v)) * 2.0f;
    want = again.to_vector<float>();
  }
  const aj::Stats before = aj::stats();
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      const std::vector<float> r = lazy.to_vector<float>();
      bad += r != want;
    });
  }
  for (auto& th : threads) th.join();
  CHECK(bad.load() == 0);
  // Claimed by the first evaluation, waited for by the others.
  CHECK(aj::stats().kernels_launched - before.kernels_launched == 1);
  CHECK(lazy.is_evaluated());
}

TEST_CASE("threads: arrays handed from thread to thread, lazy or evaluated, and dropped there") {
  const aj::Stats before = aj::stats();
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<int, Array>> queue;
  bool done = false;
  std::atomic<int> bad{0}, got{0};
  const int n = 200;
  std::thread producer([&] {
    for (int k = 0; k < n; ++k) {
      Array a = aj::arange(0, 100, 1, DType::f64) * static_cast<double>(k) + 1.0;  // lazy
      if (k % 3 == 0) a.eval();
      std::lock_guard lock(mu);
      queue.emplace_back(k, std::move(a));
      cv.notify_one();
    }
    std::lock_guard lock(mu);
    done = true;
    cv.notify_all();
  });
  std::thread consumer([&] {
    for (;;) {
      std::pair<int, Array> item;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return !queue.empty() || done; });
        if (queue.empty()) return;
        item = std::move(queue.front());
        queue.pop_front();
      }
      const int k = item.first;
      // Used as an operand here (evaluated in the producer's graph first),
      // then the last handle goes on this thread.
      Array y = aj::sum(item.second * 2.0);
      const double want = 2.0 * (static_cast<double>(k) * 4950.0 + 100.0);
      bad += y.item<double>() != want;
      item.second = Array();
      got.fetch_add(1);
    }
  });
  producer.join();
  consumer.join();
  CHECK(bad.load() == 0);
  CHECK(got.load() == n);
  CHECK(aj::stats().live_nodes == before.live_nodes);
}

TEST_CASE("threads: arrays outlive the thread that made them, and graphs are reused") {
  const std::size_t live0 = aj::stats().live_nodes;
  Array kept;
  std::thread maker([&] {
    Array a = aj::linspace(0, 1, 11, DType::f64);
    kept = a * 3.0;  // lazy, made in this thread's graph
  });
  maker.join();
  // The thread is gone; its graph is not: the array still evaluates.
  const std::vector<double> r = kept.to_vector<double>();
  REQUIRE(r.size() == 11);
  CHECK(r[10] == doctest::Approx(3.0));
  CHECK(aj::sum(kept * 2.0).item<double>() == doctest::Approx(33.0));
  kept = Array();
  CHECK(aj::stats().live_nodes == live0);
  // Many short threads one after another reuse graphs instead of piling them up.
  const std::size_t graphs0 = aj::graphs_made();
  for (int k = 0; k < 50; ++k) {
    std::thread([k] { CHECK(aj::sum(aj::ones({16}) * k).item<float>() == 16.0f * k); }).join();
  }
  CHECK(aj::graphs_made() - graphs0 <= 2);
}

TEST_CASE("threads: errors on one thread leave other threads' work intact") {
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 50; ++k) {
        Array a = aj::ones({4, 4}, DType::f64) * (t + 1);
        if (k % 2 == t % 2) {
          expect_user_error([&] { (void)aj::matmul(a, aj::ones({3, 3}, DType::f64)); }, "matmul");
          expect_user_error([&] { (void)aj::sum(a, 5); }, "sum");
        }
        bad += aj::sum(a).item<double>() != 16.0 * (t + 1);
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(bad.load() == 0);
}

TEST_CASE("threads: accessors stay valid while other threads trace") {
  Array a = aj::ones({3, 5, 7});
  const aj::Shape& s = a.shape();  // a reference into a's node
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      Array x = aj::zeros({8});
      for (int k = 0; k < 2000; ++k) {  // thousands of nodes in other graphs
        x = x + 1;
        if (k % 100 == 99) x.eval();
      }
      CHECK(x.to_vector<float>()[0] == 2000.0f);
    });
  }
  std::vector<Array> held;  // and in this one: the node table grows by several segments
  for (int k = 0; k < 5000; ++k) held.push_back(a + static_cast<float>(k));
  for (auto& th : threads) th.join();
  CHECK(s == aj::Shape{3, 5, 7});
  CHECK(s.numel() == 105);
  CHECK(held.back().shape() == s);
  CHECK(held[4999].to_vector<float>()[0] == 5000.0f);
}

}  // TEST_SUITE
