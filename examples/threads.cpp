// arrayjit inside a multi-threaded program: a small model served by worker
// threads, the way a server or a simulation would use it.
//
// The weights are made and evaluated once on the main thread; four workers
// then take batches from a queue, trace their own forward pass over the shared
// weights (each thread traces into a graph of its own, so they never wait for
// each other), evaluate it and hand the predictions back. One worker also
// prepares the next batch lazily and passes it, unevaluated, to another. The
// main thread checks every prediction against plain C++ loops.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "repl.hpp"

using namespace aj;
using example::check;
using example::values;

namespace {

constexpr int kIn = 16, kHidden = 32, kOut = 4, kBatch = 8, kBatches = 24, kWorkers = 4;

// A queue of work items between threads.
template <class T>
class Queue {
 public:
  void push(T v) {
    std::lock_guard lock(mu_);
    items_.push_back(std::move(v));
    cv_.notify_one();
  }
  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  std::optional<T> pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !items_.empty() || closed_; });
    if (items_.empty()) return std::nullopt;
    T v = std::move(items_.front());
    items_.pop_front();
    return v;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> items_;
  bool closed_ = false;
};

struct Request {
  int id = 0;
  Array x;  // [kBatch, kIn], made by the main thread or by a worker, maybe lazy
};
struct Reply {
  int id = 0;
  std::vector<double> y;
  std::thread::id by;
};

// softmax over the last axis, written with reductions (exp of x - max).
Array softmax_rows(const Array& z) {
  Array e = exp(z - max(z, -1, true));
  return e / sum(e, -1, true);
}

// The forward pass, traced on whichever thread calls it.
Array forward(const Array& x, const Array& w1, const Array& b1, const Array& w2, const Array& b2) {
  Array h = maximum(matmul(x, w1) + b1, 0.0);  // ReLU
  return softmax_rows(matmul(h, w2) + b2);
}

}  // namespace

int main() {
  std::cout << "# the model: two dense layers, made and evaluated once on the main thread\n";
  STEP(random::seed(7));
  STEP(Array w1 = random::normal({kIn, kHidden}, 0, 0.3, DType::f64));
  STEP(Array b1 = random::normal({kHidden}, 0, 0.1, DType::f64));
  STEP(Array w2 = random::normal({kHidden, kOut}, 0, 0.3, DType::f64));
  STEP(Array b2 = random::normal({kOut}, 0, 0.1, DType::f64));
  STEP(eval({w1, b1, w2, b2}));
  SHOW(b2);

  std::cout << "\n# " << kBatches << " requests; " << kWorkers
            << " workers each trace and evaluate their own forward pass over the shared weights\n";
  std::cout << ">>> std::thread worker([&] {\n"
               "...   while (auto r = requests.pop()) {\n"
               "...     Array y = forward(r->x, w1, b1, w2, b2);   // traced on this thread\n"
               "...     replies.push({r->id, y.to_vector<double>()});\n"
               "...   }\n"
               "... });\n";
  Queue<Request> requests;
  Queue<Reply> replies;
  std::vector<std::vector<double>> inputs(kBatches);
  for (int k = 0; k < kBatches; ++k) {
    Array x = random::uniform({kBatch, kIn}, -1, 1, DType::f64).eval();
    std::vector<double>& in = inputs[static_cast<std::size_t>(k)];
    in = values(x);
    if (k % 2 == 0) {  // sent lazy: evaluated when a worker first uses it
      x = x * 2.0;
      for (double& v : in) v *= 2.0;
    }
    requests.push({k, x});
  }
  requests.close();
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&] {
      while (std::optional<Request> r = requests.pop()) {
        Array y = forward(r->x, w1, b1, w2, b2);
        replies.push({r->id, y.to_vector<double>(), std::this_thread::get_id()});
      }
    });
  }
  for (auto& t : workers) t.join();
  replies.close();

  std::vector<std::vector<double>> got(kBatches);
  std::vector<std::thread::id> who;
  while (std::optional<Reply> r = replies.pop()) {
    got[static_cast<std::size_t>(r->id)] = std::move(r->y);
    if (std::find(who.begin(), who.end(), r->by) == who.end()) who.push_back(r->by);
  }
  std::cout << "    " << kBatches << " replies from " << who.size() << " threads\n";

  // The same forward pass in plain loops.
  const std::vector<double> W1 = values(w1), B1 = values(b1), W2 = values(w2), B2 = values(b2);
  std::vector<double> want_all, got_all;
  for (int k = 0; k < kBatches; ++k) {
    const std::vector<double>& x = inputs[static_cast<std::size_t>(k)];
    for (int i = 0; i < kBatch; ++i) {
      std::vector<double> h(kHidden), z(kOut);
      for (int j = 0; j < kHidden; ++j) {
        double s = B1[static_cast<std::size_t>(j)];
        for (int q = 0; q < kIn; ++q) s += x[static_cast<std::size_t>(i * kIn + q)] * W1[static_cast<std::size_t>(q * kHidden + j)];
        h[static_cast<std::size_t>(j)] = std::max(s, 0.0);
      }
      double mx = -1e300, total = 0;
      for (int o = 0; o < kOut; ++o) {
        double s = B2[static_cast<std::size_t>(o)];
        for (int j = 0; j < kHidden; ++j) s += h[static_cast<std::size_t>(j)] * W2[static_cast<std::size_t>(j * kOut + o)];
        z[static_cast<std::size_t>(o)] = s;
        mx = std::max(mx, s);
      }
      for (int o = 0; o < kOut; ++o) total += std::exp(z[static_cast<std::size_t>(o)] - mx);
      for (int o = 0; o < kOut; ++o) want_all.push_back(std::exp(z[static_cast<std::size_t>(o)] - mx) / total);
    }
    got_all.insert(got_all.end(), got[static_cast<std::size_t>(k)].begin(), got[static_cast<std::size_t>(k)].end());
  }
  check("every prediction of every worker", got_all, want_all, 1e-12, 1e-15);

  std::cout << "\n# a pipeline: one thread makes lazy batches, another consumes them\n";
  std::cout << ">>> std::thread maker([&] { for (...) lazy.push(random::uniform(...) * 3.0 - 1.0); });\n"
               ">>> std::thread user([&] { while (auto x = lazy.pop()) totals.push_back(sum(*x).item<double>()); });\n";
  Queue<Array> lazy;
  std::vector<double> totals, made;
  std::thread maker([&] {
    random::seed(11);  // the random state is per thread
    for (int k = 0; k < 10; ++k) {
      Array x = random::uniform({1000}, 0, 1, DType::f64) * 3.0 - 1.0;  // not evaluated here
      lazy.push(x);
    }
    lazy.close();
  });
  std::thread user([&] {
    while (std::optional<Array> x = lazy.pop()) totals.push_back(sum(*x).item<double>());
  });
  maker.join();
  user.join();
  random::seed(11);
  for (int k = 0; k < 10; ++k) {
    const std::vector<double> x = values(random::uniform({1000}, 0, 1, DType::f64) * 3.0 - 1.0);
    double s = 0;
    for (double v : x) s += v;
    made.push_back(s);
  }
  check("sums of the lazy batches, made on one thread and used on another", totals, made, 1e-12);
  return example::finish();
}
