// A tour for NumPy users: creation, broadcasting, dtype promotion, reductions,
// views and slices, each step as you would type it at a prompt, then its value.
// The values are checked against ones worked out by hand (the comments give
// the NumPy spelling).
#include "repl.hpp"

using namespace aj;
using example::check;
using example::values;

namespace {

// 0, 1, ..., n-1 as doubles: the hand-written side of most checks below.
std::vector<double> iota(int n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

}  // namespace

int main() {
  std::cout << "# creation\n";
  SHOW(arange(6));                   // np.arange(6)
  check("arange", values(arange(6)), iota(6), 0);
  SHOW(linspace(0, 1, 5));           // np.linspace(0, 1, 5, dtype=np.float32)
  check("linspace", values(linspace(0, 1, 5)), {0, 0.25, 0.5, 0.75, 1}, 0);
  SHOW(eye(3, 4, 1));                // np.eye(3, 4, k=1)
  check("eye", values(eye(3, 4, 1)), {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, 0);
  SHOW(full({2, 2}, 7, DType::i32)); // np.full((2, 2), 7, dtype=np.int32)
  check("full", values(full({2, 2}, 7, DType::i32)), {7, 7, 7, 7}, 0);
  STEP(Array a = arange(12).reshape({3, 4}));  // a = np.arange(12).reshape(3, 4)
  SHOW(a);
  check("a", values(a), iota(12), 0);

  std::cout << "\n# broadcasting: shapes align on the right, extents of 1 stretch\n";
  STEP(Array row = from_vector<double>({10, 20, 30, 40}));          // shape (4,)
  STEP(Array col = from_vector<double>({100, 200, 300}, {3, 1}));   // shape (3, 1)
  SHOW(row + col);
  SHOW(a * row);
  std::vector<double> row_col, a_row;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) {
      row_col.push_back(10.0 * (j + 1) + 100.0 * (i + 1));
      a_row.push_back((4 * i + j) * 10.0 * (j + 1));
    }
  }
  check("row + col", values(row + col), row_col, 0);
  check("a * row", values(a * row), a_row, 0);

  std::cout << "\n# dtype promotion: NumPy's rules; a C++ scalar takes the array's dtype\n";
  SHOW((a + 1).dtype());                                  // int64: the scalar is weak
  SHOW((a + 0.5).dtype());                                // float64: a float meets integers
  SHOW((ones({2}, DType::f32) * 2.0).dtype());            // float32 stays float32
  SHOW((ones({2}, DType::f32) + ones({2}, DType::i32)).dtype());  // float64, as NumPy
  SHOW((a > 5).dtype());                                  // bool
  check("dtypes", {double((a + 1).dtype() == DType::i64), double((a + 0.5).dtype() == DType::f64),
                   double((ones({2}, DType::f32) * 2.0).dtype() == DType::f32),
                   double((ones({2}, DType::f32) + ones({2}, DType::i32)).dtype() == DType::f64),
                   double((a > 5).dtype() == DType::bool_)},
        {1, 1, 1, 1, 1}, 0);
  SHOW(a / 5);                        // on integers / is floor division: a // 5
  SHOW(true_divide(a, 4));            // a / 4, always floating point
  SHOW((a - 6) % 5);                  // the sign of the divisor, as NumPy
  std::vector<double> floor_div, true_div, mod;
  for (int i = 0; i < 12; ++i) {
    floor_div.push_back(i / 5);
    true_div.push_back(i / 4.0);
    mod.push_back(((i - 6) % 5 + 5) % 5);
  }
  check("a / 5", values(a / 5), floor_div, 0);
  check("true_divide", values(true_divide(a, 4)), true_div, 0);
  check("(a - 6) % 5", values((a - 6) % 5), mod, 0);

  std::cout << "\n# reductions\n";
  SHOW(sum(a));                       // a.sum()
  SHOW(sum(a, 0));                    // a.sum(axis=0)
  SHOW(mean(a, 1));                   // a.mean(axis=1): float64 for integers
  SHOW(max(a, 1, true));              // a.max(axis=1, keepdims=True): shape (3, 1)
  SHOW(argmax((a - 5) * (a - 5)));    // flat index of the largest: ((a - 5)**2).argmax()
  check("sum", values(sum(a)), {66}, 0);
  check("sum axis 0", values(sum(a, 0)), {12, 15, 18, 21}, 0);
  check("mean axis 1", values(mean(a, 1)), {1.5, 5.5, 9.5}, 0);
  check("max keepdims", values(max(a, 1, true)), {3, 7, 11}, 0);
  check("max keepdims shape", double(max(a, 1, true).shape() == Shape{3, 1}), 1, 0);
  check("argmax", values(argmax((a - 5) * (a - 5))), {11}, 0);

  std::cout << "\n# views: transpose, broadcast_to, reshape and slices share memory\n";
  STEP(Array t = a.T());              // a.T
  SHOW(explain(t));                   // the plan: a view of a's buffer, no kernel, no copy
  SHOW(t);
  std::vector<double> a_t;
  for (int j = 0; j < 4; ++j) {
    for (int i = 0; i < 3; ++i) a_t.push_back(4 * i + j);
  }
  check("a.T", values(t), a_t, 0);
  SHOW(broadcast_to(col, {3, 4}));    // np.broadcast_to(col, (3, 4))
  check("broadcast_to", values(broadcast_to(col, {3, 4})),
        {100, 100, 100, 100, 200, 200, 200, 200, 300, 300, 300, 300}, 0);
  SHOW(expand_dims(row, 0).shape());  // row[None, :].shape
  check("expand_dims shape", double(expand_dims(row, 0).shape() == Shape{1, 4}), 1, 0);

  std::cout << "\n# slices: Python's start:stop:step, one Slice per axis\n";
  SHOW(slice(a, {Slice(1, {}), Slice({}, {}, 2)}));  // a[1:, ::2]
  SHOW(slice(a, 1, {}, {}, -1));                     // a[:, ::-1]
  SHOW(slice(a, 0, -1, {}));                         // a[-1:]
  check("a[1:, ::2]", values(slice(a, {Slice(1, {}), Slice({}, {}, 2)})), {4, 6, 8, 10}, 0);
  check("a[:, ::-1]", values(slice(a, 1, {}, {}, -1)), {3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8}, 0);
  check("a[-1:]", values(slice(a, 0, -1, {})), {8, 9, 10, 11}, 0);

  std::cout << "\n# selecting and joining\n";
  SHOW(where(a % 2 == 0, a, -a));                    // np.where(a % 2 == 0, a, -a)
  SHOW(concatenate({a, t.T()}, 0).shape());          // np.concatenate([a, a], axis=0)
  SHOW(stack({row, row * 2}, 1));                    // np.stack([row, row * 2], axis=1)
  std::vector<double> even_odd;
  for (int i = 0; i < 12; ++i) even_odd.push_back(i % 2 == 0 ? i : -i);
  check("where", values(where(a % 2 == 0, a, -a)), even_odd, 0);
  std::vector<double> a_twice;
  for (int i = 0; i < 24; ++i) a_twice.push_back(i % 12);
  check("concatenate", values(concatenate({a, t.T()}, 0)), a_twice, 0);
  check("stack", values(stack({row, row * 2}, 1)), {10, 20, 20, 40, 30, 60, 40, 80}, 0);
  return example::finish();
}
