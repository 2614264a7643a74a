// einsum (arrayjit/einsum.hpp): the subscripts parsed and checked against
// the operands' shapes into a Plan (every label's extent, the output, each
// operand's labels once its own work is done, the contraction order), then
// carried out with views, sum, multiply and matmul.
//
// Labels: letters are 0..51 in ASCII order (A-Z, then a-z, NumPy's implicit
// output order); the axes under "..." are labels 52, 53, ..., aligned from
// the right across operands as broadcasting aligns them.
#include "arrayjit/einsum.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <sstream>
#include <string>
#include <tuple>

#include "arrayjit/shape_functions.hpp"
#include "core/api/trace.hpp"

namespace aj {

namespace {

constexpr int kLetters = 52;
constexpr int kEllipsis = -1;  // in a parsed term: where "..." stands
constexpr const char* kOp = "einsum";

int letter_label(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' : c - 'a' + 26; }
bool is_letter(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
// A label as shown: its letter, or a digit for the axes under "...".
char label_char(int l) {
  if (l < 26) return static_cast<char>('A' + l);
  if (l < kLetters) return static_cast<char>('a' + l - 26);
  return l - kLetters < 10 ? static_cast<char>('0' + l - kLetters) : '#';
}
std::string quoted(int l) { return std::string("'") + label_char(l) + "'"; }

// One term of the subscripts: its labels, kEllipsis where "..." stands.
std::vector<int> parse_term(std::string_view t, const std::string& what, const Loc& loc) {
  std::vector<int> out;
  bool ellipsis = false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (is_letter(t[i])) {
      out.push_back(letter_label(t[i]));
      continue;
    }
    // Only '.' reaches here (the characters were checked).
    if (t.substr(i, 3) != "...") {
      user_error(kOp, "a '.' that is not part of an ellipsis '...' in " + what, loc);
    }
    if (ellipsis) user_error(kOp, "more than one ellipsis '...' in " + what, loc);
    ellipsis = true;
    out.push_back(kEllipsis);
    i += 2;
  }
  return out;
}

struct Plan {
  std::vector<std::vector<int>> labels;  // per operand, one per axis (ellipsis expanded)
  std::vector<int> out;                  // the output's labels, in order
  std::vector<std::int64_t> extent;      // per label (1 where it broadcasts or is absent)
  std::vector<bool> in_out;              // per label
  // Per operand, the labels left once its repeated ones are a diagonal, its
  // extent-1 axes of labels broadcast against a longer extent are dropped,
  // and the labels no other operand nor the output has are summed.
  std::vector<std::vector<int>> prepared;
  EinsumPath path;
};

// Labels of a set, sorted (the path search works on sets).
using Set = std::vector<int>;
bool has(const Set& s, int l) { return std::binary_search(s.begin(), s.end(), l); }
Set unite(const Set& a, const Set& b) {
  Set u;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(u));
  return u;
}

struct PathSearch {
  const Plan& p;
  double size(const Set& s) const {
    double n = 1;
    for (int l : s) n *= static_cast<double>(p.extent[static_cast<std::size_t>(l)]);
    return n;
  }
  // The labels of the contraction of list[i] and list[j] still needed: by
  // the output or another operand of the list.
  Set result(const std::vector<Set>& list, std::size_t i, std::size_t j) const {
    Set r;
    for (int l : unite(list[i], list[j])) {
      bool keep = p.in_out[static_cast<std::size_t>(l)];
      for (std::size_t k = 0; k < list.size() && !keep; ++k) keep = k != i && k != j && has(list[k], l);
      if (keep) r.push_back(l);
    }
    return r;
  }
  static std::vector<Set> after(std::vector<Set> list, std::size_t i, std::size_t j, Set r) {
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(j));
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
    list.push_back(std::move(r));
    return list;
  }
  // Every order: the cheapest total (ties: the first found, left to right).
  double exhaustive(const std::vector<Set>& list, std::vector<std::pair<int, int>>& best) const {
    if (list.size() < 2) return 0;
    double best_cost = INFINITY;
    for (std::size_t i = 0; i < list.size(); ++i) {
      for (std::size_t j = i + 1; j < list.size(); ++j) {
        std::vector<std::pair<int, int>> rest;
        const double c = size(unite(list[i], list[j])) + exhaustive(after(list, i, j, result(list, i, j)), rest);
        if (c < best_cost) {
          best_cost = c;
          best = {{static_cast<int>(i), static_cast<int>(j)}};
          best.insert(best.end(), rest.begin(), rest.end());
        }
      }
    }
    return best_cost;
  }
  // opt_einsum's greedy: among pairs sharing a label, the one whose result
  // grows least over its inputs (ties: the cheaper); with none, the pair
  // with the smallest result.
  std::vector<std::pair<int, int>> greedy(std::vector<Set> list) const {
    std::vector<std::pair<int, int>> steps;
    while (list.size() > 1) {
      std::size_t bi = 0, bj = 1;
      double best_score = INFINITY, best_cost = INFINITY;
      bool shared_found = false;
      for (std::size_t i = 0; i < list.size(); ++i) {
        for (std::size_t j = i + 1; j < list.size(); ++j) {
          Set both;
          std::set_intersection(list[i].begin(), list[i].end(), list[j].begin(), list[j].end(),
                                std::back_inserter(both));
          const bool shared = !both.empty();
          if (shared_found && !shared) continue;
          const double r = size(result(list, i, j)), cost = size(unite(list[i], list[j]));
          const double score = shared ? r - size(list[i]) - size(list[j]) : r;
          if ((shared && !shared_found) || score < best_score || (score == best_score && cost < best_cost)) {
            bi = i, bj = j, best_score = score, best_cost = cost;
            shared_found = shared_found || shared;
          }
        }
      }
      steps.emplace_back(static_cast<int>(bi), static_cast<int>(bj));
      list = after(list, bi, bj, result(list, bi, bj));
    }
    return steps;
  }
};

std::string term_str(const std::vector<int>& labels) {
  std::string s;
  for (int l : labels) s += label_char(l);
  return s;
}

// The subscripts checked against the shapes (`names` describe the operands
// in messages); every mistake is a located error naming einsum.
Plan make_plan(std::string_view subscripts, const std::vector<Shape>& shapes, const std::vector<std::string>& names,
               const Loc& loc) {
  std::string s;
  for (std::size_t i = 0; i < subscripts.size(); ++i) {
    const char c = subscripts[i];
    if (c == ' ') continue;
    const bool arrow = c == '-' && i + 1 < subscripts.size() && subscripts[i + 1] == '>';
    if (!is_letter(c) && c != '.' && c != ',' && !arrow && !(c == '>' && i > 0 && subscripts[i - 1] == '-')) {
      user_error(kOp, "invalid character '" + std::string(1, c) + "' at position " + std::to_string(i) +
                          " of the subscripts \"" + std::string(subscripts) + "\" (letters a-z A-Z, ',', '...', '->')",
                 loc);
    }
    s += c;
  }
  const std::size_t arrow = s.find("->");
  if (arrow != std::string::npos && s.find("->", arrow + 2) != std::string::npos) {
    user_error(kOp, "'->' appears more than once in \"" + std::string(subscripts) + "\"", loc);
  }
  const std::string lhs = s.substr(0, arrow);
  if (arrow != std::string::npos && s.find(',', arrow) != std::string::npos) {
    user_error(kOp, "a ',' in the output of \"" + std::string(subscripts) + "\"", loc);
  }
  if (shapes.empty()) user_error(kOp, "needs at least one operand", loc);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',') {
      terms.emplace_back();
    } else {
      terms.back() += c;
    }
  }
  if (terms.size() != shapes.size()) {
    user_error(kOp, "the subscripts \"" + std::string(subscripts) + "\" name " + std::to_string(terms.size()) +
                        " operand" + (terms.size() == 1 ? "" : "s") + ", got " + std::to_string(shapes.size()),
               loc);
  }

  Plan p;
  const std::size_t n = shapes.size();
  std::vector<std::vector<int>> parsed;
  int max_ellipsis = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::string what = "operand " + std::to_string(k) + " (\"" + terms[k] + "\")";
    parsed.push_back(parse_term(terms[k], what, loc));
    const bool ell = std::count(parsed[k].begin(), parsed[k].end(), kEllipsis) > 0;
    const int letters = static_cast<int>(parsed[k].size()) - (ell ? 1 : 0), rank = shapes[k].ndim();
    if (letters > rank || (!ell && letters != rank)) {
      user_error(kOp, "operand " + std::to_string(k) + " is " + names[k] + " but its subscripts \"" + terms[k] +
                          "\" name " + std::to_string(letters) + " ax" + (letters == 1 ? "is" : "es") +
                          (ell ? " besides '...'" : "") + (letters > rank ? "" : " (no '...' stands for the rest)"),
                 loc);
    }
    max_ellipsis = std::max(max_ellipsis, rank - letters);
  }
  const std::size_t nlabels = static_cast<std::size_t>(kLetters + max_ellipsis);
  p.extent.assign(nlabels, 1);
  p.in_out.assign(nlabels, false);
  std::vector<int> owner(nlabels, -1);  // the operand that set extent (> 1)
  std::vector<int> occurrences(nlabels, 0);
  for (std::size_t k = 0; k < n; ++k) {
    const int rank = shapes[k].ndim();
    const int e = rank - static_cast<int>(parsed[k].size()) + 1;  // axes under "..." (when there is one)
    std::vector<int>& L = p.labels.emplace_back();
    for (int l : parsed[k]) {
      if (l != kEllipsis) {
        L.push_back(l);
        continue;
      }
      for (int j = 0; j < e; ++j) L.push_back(kLetters + max_ellipsis - e + j);
    }
    for (std::size_t i = 0; i < L.size(); ++i) {
      const int l = L[i];
      const std::int64_t x = shapes[k][static_cast<int>(i)];
      ++occurrences[static_cast<std::size_t>(l)];
      for (std::size_t i2 = 0; i2 < i; ++i2) {
        if (L[i2] == l && shapes[k][static_cast<int>(i2)] != x) {
          user_error(kOp, "letter " + quoted(l) + " repeats in operand " + std::to_string(k) + " (" + names[k] +
                              ") with extents " + std::to_string(shapes[k][static_cast<int>(i2)]) + " and " +
                              std::to_string(x) + "; a diagonal needs them equal",
                     loc);
        }
      }
      std::int64_t& ext = p.extent[static_cast<std::size_t>(l)];
      if (x == 1 || x == ext) continue;
      if (ext != 1) {
        const int o = owner[static_cast<std::size_t>(l)];
        user_error(kOp, (l < kLetters ? "letter " + quoted(l) : std::string("an axis under '...'")) +
                            " has extent " + std::to_string(ext) + " in operand " + std::to_string(o) + " (" +
                            names[static_cast<std::size_t>(o)] + ") and " + std::to_string(x) + " in operand " +
                            std::to_string(k) + " (" + names[k] + "); extents must agree or be 1",
                   loc);
      }
      ext = x;
      owner[static_cast<std::size_t>(l)] = static_cast<int>(k);
    }
  }

  // The output.
  if (arrow != std::string::npos) {
    const std::string rhs = s.substr(arrow + 2);
    const std::vector<int> o = parse_term(rhs, "the output (\"" + rhs + "\")", loc);
    const bool ell = std::count(o.begin(), o.end(), kEllipsis) > 0;
    if (!ell && max_ellipsis > 0) {
      user_error(kOp, "the operands have " + std::to_string(max_ellipsis) + " ax" + (max_ellipsis == 1 ? "is" : "es") +
                          " under '...' but the output \"" + rhs + "\" has no '...' (NumPy's rule)",
                 loc);
    }
    for (int l : o) {
      if (l == kEllipsis) {
        for (int j = 0; j < max_ellipsis; ++j) p.out.push_back(kLetters + j);
        continue;
      }
      if (occurrences[static_cast<std::size_t>(l)] == 0) {
        user_error(kOp, "output letter " + quoted(l) + " is in no operand's subscripts", loc);
      }
      if (p.in_out[static_cast<std::size_t>(l)]) user_error(kOp, "output letter " + quoted(l) + " repeats", loc);
      p.in_out[static_cast<std::size_t>(l)] = true;
      p.out.push_back(l);
    }
  } else {
    for (int j = 0; j < max_ellipsis; ++j) p.out.push_back(kLetters + j);
    for (int l = 0; l < kLetters; ++l) {
      if (occurrences[static_cast<std::size_t>(l)] == 1) p.out.push_back(l);
    }
  }
  for (int l : p.out) p.in_out[static_cast<std::size_t>(l)] = true;

  // Each operand's labels once its own work is done (see Plan::prepared).
  std::vector<Set> present(n);
  std::vector<int> count(nlabels, 0);
  for (std::size_t k = 0; k < n; ++k) {
    for (std::size_t i = 0; i < p.labels[k].size(); ++i) {
      const int l = p.labels[k][i];
      const bool broadcast = shapes[k][static_cast<int>(i)] == 1 && p.extent[static_cast<std::size_t>(l)] > 1;
      if (!broadcast && !has(present[k], l)) {
        present[k].insert(std::lower_bound(present[k].begin(), present[k].end(), l), l);
        ++count[static_cast<std::size_t>(l)];
      }
    }
  }
  for (std::size_t k = 0; k < n; ++k) {
    Set& prep = p.prepared.emplace_back();
    for (int l : present[k]) {
      if (p.in_out[static_cast<std::size_t>(l)] || count[static_cast<std::size_t>(l)] > 1) prep.push_back(l);
    }
  }

  // The contraction order and its cost.
  const PathSearch search{p};
  if (n <= 5) {
    search.exhaustive(p.prepared, p.path.steps);
  } else {
    p.path.steps = search.greedy(p.prepared);
  }
  std::vector<Set> list = p.prepared;
  for (const auto& [i, j] : p.path.steps) {
    const auto ui = static_cast<std::size_t>(i), uj = static_cast<std::size_t>(j);
    Set r = search.result(list, ui, uj);
    p.path.flops += search.size(unite(list[ui], list[uj]));
    p.path.step_subscripts.push_back(term_str(list[ui]) + "," + term_str(list[uj]) + "->" + term_str(r));
    list = PathSearch::after(std::move(list), ui, uj, std::move(r));
  }
  Set all;
  for (const auto& L : p.labels) all.insert(all.end(), L.begin(), L.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  p.path.naive_flops = search.size(all) * static_cast<double>(std::max<std::size_t>(n - 1, 1));
  return p;
}

// An array with the label of each of its axes.
struct Labeled {
  Array a;
  std::vector<int> labels;
};

Array cast_to(const Array& a, DType t, const Loc& loc) { return a.dtype() == t ? a : a.astype(t, loc); }

// x with the axes whose labels `drop` says summed, in dtype t (sum widens
// bool and i32).
void sum_labels(Labeled& x, const std::function<bool(int)>& drop, DType t, const Loc& loc) {
  std::vector<int> axes, kept;
  for (std::size_t i = 0; i < x.labels.size(); ++i) {
    if (drop(x.labels[i])) {
      axes.push_back(static_cast<int>(i));
    } else {
      kept.push_back(x.labels[i]);
    }
  }
  if (axes.empty()) return;
  x.a = cast_to(sum(x.a, Axes(axes), false, loc), t, loc);
  x.labels = kept;
}

// x's axes reordered as `order` (labels x has), merged into the extents of
// the groups `groups` (numbers of labels of `order`, in turn).
Array grouped(const Labeled& x, const std::vector<int>& order, const std::vector<std::int64_t>& groups,
              const Loc& loc) {
  std::vector<int> perm;
  for (int l : order) {
    perm.push_back(static_cast<int>(std::find(x.labels.begin(), x.labels.end(), l) - x.labels.begin()));
  }
  bool identity = true;
  for (std::size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int>(i);
  const Array t = identity ? x.a : transpose(x.a, perm, loc);
  const Shape s(groups);
  return t.shape() == s ? t : reshape(t, s, loc);
}

// x and y contracted: the labels `keep` says are still needed stay (batch
// ones where both have them), the others are summed.
Labeled contract(const Labeled& x_in, const Labeled& y_in, const std::function<bool(int)>& keep,
                 const Plan& p, DType t, const Loc& loc) {
  Labeled x = x_in, y = y_in;
  auto in = [](const Labeled& z, int l) { return std::find(z.labels.begin(), z.labels.end(), l) != z.labels.end(); };
  // Labels only one of them has and nothing needs (none after the operands'
  // own sums, kept for safety).
  sum_labels(x, [&](int l) { return !in(y, l) && !keep(l); }, t, loc);
  sum_labels(y, [&](int l) { return !in(x, l) && !keep(l); }, t, loc);
  std::vector<int> batch, summed, left, right;
  for (int l : x.labels) (in(y, l) ? (keep(l) ? batch : summed) : left).push_back(l);
  for (int l : y.labels) {
    if (!in(x, l)) right.push_back(l);
  }
  auto extent = [&](const std::vector<int>& ls) {
    std::int64_t e = 1;
    for (int l : ls) e *= p.extent[static_cast<std::size_t>(l)];
    return e;
  };
  const std::int64_t M = extent(left), K = extent(summed), N = extent(right);
  auto cat = [](std::vector<int> a, const std::vector<int>& b, const std::vector<int>& c) {
    a.insert(a.end(), b.begin(), b.end());
    a.insert(a.end(), c.begin(), c.end());
    return a;
  };
  // The batch axes stay apart (matmul and multiply take any number), so an
  // operand whose groups are single letters goes in as the view it is, a
  // transposed one included (matmul reads it without a copy).
  auto dims = [&](std::vector<std::int64_t> tail) {
    std::vector<std::int64_t> d;
    for (int l : batch) d.push_back(p.extent[static_cast<std::size_t>(l)]);
    d.insert(d.end(), tail.begin(), tail.end());
    return d;
  };
  Array r;
  if (summed.empty()) {
    // An outer product (per batch index): elementwise, fused into its consumer.
    const Array a = grouped(x, cat(batch, left, {}), dims({M, 1}), loc);
    const Array b = grouped(y, cat(batch, right, {}), dims({1, N}), loc);
    r = multiply(Operand(a, loc), Operand(b, loc));
  } else if (M == 1 && N == 1) {
    // Dot products: a fused multiply and sum beats a matmul of vectors.
    const Array a = grouped(x, cat(batch, left, summed), dims({K}), loc);
    const Array b = grouped(y, cat(batch, summed, right), dims({K}), loc);
    r = cast_to(sum(multiply(Operand(a, loc), Operand(b, loc)), -1, false, loc), t, loc);
  } else {
    // The BLAS: [batch..., M, K] @ [batch..., K, N].
    const Array a = grouped(x, cat(batch, left, summed), dims({M, K}), loc);
    const Array b = grouped(y, cat(batch, summed, right), dims({K, N}), loc);
    r = matmul(a, b, loc);
  }
  Labeled out;
  out.labels = cat(batch, left, right);
  std::vector<std::int64_t> d;
  for (int l : out.labels) d.push_back(p.extent[static_cast<std::size_t>(l)]);
  const Shape shape(std::move(d));
  out.a = r.shape() == shape ? r : reshape(r, shape, loc);
  return out;
}

}  // namespace

std::string EinsumPath::str() const {
  std::ostringstream s;
  s << "naive multiply-adds: " << naive_flops << "\noptimized multiply-adds: " << flops << "\n";
  for (std::size_t i = 0; i < steps.size(); ++i) {
    s << "(" << steps[i].first << ", " << steps[i].second << ") " << step_subscripts[i] << "\n";
  }
  return s.str();
}

EinsumPath einsum_path(std::string_view subscripts, const std::vector<Shape>& shapes, Loc loc) {
  std::vector<std::string> names;
  for (const Shape& s : shapes) names.push_back("shape " + s.str());
  return make_plan(subscripts, shapes, names, loc).path;
}

Array einsum(std::string_view subscripts, const std::vector<Array>& operands, Loc loc) {
  std::vector<Shape> shapes;
  std::vector<std::string> names;
  for (std::size_t k = 0; k < operands.size(); ++k) {
    if (!operands[k].valid()) {
      user_error(kOp, "operand " + std::to_string(k) + " is an empty Array handle (default-constructed or moved-from)",
                 loc);
    }
    shapes.push_back(operands[k].shape(loc));
    names.push_back(trace::describe(operands[k]));
  }
  const Plan p = make_plan(subscripts, shapes, names, loc);
  DType result = operands[0].dtype();
  for (const Array& a : operands) result = promote_types(result, a.dtype());
  // bool: computed as counts in i64 (multiply and matmul take no bool), any
  // nonzero count true at the end: the or of ands, NumPy's bool einsum.
  const DType t = result == DType::bool_ ? DType::i64 : result;

  // Each operand's own work: diagonals, broadcast axes dropped, own labels summed.
  std::vector<Labeled> list;
  for (std::size_t k = 0; k < operands.size(); ++k) {
    Labeled x{cast_to(operands[k], t, loc), p.labels[k]};
    // A repeated label: the diagonal of its first two axes, appended last.
    auto repeated = [&]() -> std::pair<int, int> {
      for (std::size_t i = 0; i < x.labels.size(); ++i) {
        for (std::size_t j = i + 1; j < x.labels.size(); ++j) {
          if (x.labels[i] == x.labels[j]) return {static_cast<int>(i), static_cast<int>(j)};
        }
      }
      return {-1, -1};
    };
    for (auto [i, j] = repeated(); i >= 0; std::tie(i, j) = repeated()) {
      const int l = x.labels[static_cast<std::size_t>(i)];
      x.a = diagonal(x.a, 0, i, j, loc);
      x.labels.erase(x.labels.begin() + j);
      x.labels.erase(x.labels.begin() + i);
      x.labels.push_back(l);
    }
    std::vector<int> ones, kept;
    for (std::size_t i = 0; i < x.labels.size(); ++i) {
      const int l = x.labels[i];
      if (x.a.shape()[static_cast<int>(i)] == 1 && p.extent[static_cast<std::size_t>(l)] > 1) {
        ones.push_back(static_cast<int>(i));
      } else {
        kept.push_back(l);
      }
    }
    if (!ones.empty()) {
      x.a = squeeze(x.a, Axes(ones), loc);
      x.labels = kept;
    }
    const Set& prep = p.prepared[k];
    sum_labels(x, [&](int l) { return !has(prep, l); }, t, loc);
    list.push_back(std::move(x));
  }

  for (const auto& [i, j] : p.path.steps) {
    const auto ui = static_cast<std::size_t>(i), uj = static_cast<std::size_t>(j);
    const Labeled x = list[ui], y = list[uj];
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(uj));
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(ui));
    auto keep = [&](int l) {
      if (p.in_out[static_cast<std::size_t>(l)]) return true;
      for (const Labeled& z : list) {
        if (std::find(z.labels.begin(), z.labels.end(), l) != z.labels.end()) return true;
      }
      return false;
    };
    list.push_back(contract(x, y, keep, p, t, loc));
  }

  Labeled& r = list[0];
  sum_labels(r, [&](int l) { return !p.in_out[static_cast<std::size_t>(l)]; }, t, loc);
  std::vector<int> perm;
  bool identity = r.labels.size() == p.out.size();
  for (int l : p.out) {
    const auto at = std::find(r.labels.begin(), r.labels.end(), l);
    // Never: an extent-1 axis is dropped only where another operand has the
    // label with a longer extent, and contractions keep output labels.
    if (at == r.labels.end()) internal_error("einsum lost output label " + quoted(l));
    perm.push_back(static_cast<int>(at - r.labels.begin()));
    identity = identity && perm.back() == static_cast<int>(perm.size() - 1);
  }
  const Array out = identity ? r.a : transpose(r.a, perm, loc);
  return cast_to(out, result, loc);
}

}  // namespace aj
