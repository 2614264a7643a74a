// Black-Scholes prices of European options: a whole book of calls and puts
// priced at once with the closed-form formula, and one call priced by Monte
// Carlo simulation. Both are checked against the closed form evaluated in
// scalar code with std::erfc, and against Hull's textbook example.
//
//   call = S N(d1) - K e^{-rT} N(d2),   put = K e^{-rT} N(-d2) - S N(-d1),
//   d1 = (ln(S/K) + (r + sigma^2/2) T) / (sigma sqrt T),   d2 = d1 - sigma sqrt T,
//   N(x) = erfc(-x / sqrt 2) / 2.
#include <numbers>

#include "repl.hpp"

using namespace aj;
using example::check;
using example::values;

namespace {

constexpr int kOptions = 100000, kPaths = 1000000;

// erfc from elementwise ops (Numerical Recipes' erfcc, a Chebyshev fit:
// relative error below 1.2e-7 everywhere).
Array erfc(const Array& x) {
  const double c[] = {-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
                       0.27886807,  -1.13520398, 1.48851587, -0.82215223, 0.17087277};
  Array t = 1 / (1 + 0.5 * abs(x));
  Array poly = full(t.shape(), c[9], t.dtype());  // Horner: c0 + t (c1 + t (c2 + ...))
  for (int k = 8; k >= 0; --k) poly = c[k] + t * poly;
  Array tail = t * exp(-x * x + poly);
  return where(x >= 0, tail, 2 - tail);
}

Array normal_cdf(const Array& x) { return 0.5 * erfc(-x / std::numbers::sqrt2); }

struct Prices {
  Array call, put;
};

Prices black_scholes(const Array& S, const Array& K, const Array& T, const Array& sigma, double r) {
  Array vol = sigma * sqrt(T);
  Array d1 = (log(S / K) + (r + sigma * sigma / 2) * T) / vol;
  Array d2 = d1 - vol;
  Array discounted_K = K * exp(-r * T);
  return {S * normal_cdf(d1) - discounted_K * normal_cdf(d2),
          discounted_K * normal_cdf(-d2) - S * normal_cdf(-d1)};
}

// The same formula in scalar code, with the C library's erfc.
double call_by_hand(double S, double K, double T, double sigma, double r) {
  const auto N = [](double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); };
  const double d1 = (std::log(S / K) + (r + sigma * sigma / 2) * T) / (sigma * std::sqrt(T));
  return S * N(d1) - K * std::exp(-r * T) * N(d1 - sigma * std::sqrt(T));
}

}  // namespace

int main() {
  std::cout << "# Hull's example: S = 42, K = 40, r = 10%, sigma = 20%, T = 6 months\n";
  STEP(Prices hull = black_scholes(full({1}, 42, DType::f64), full({1}, 40, DType::f64),
                                   full({1}, 0.5, DType::f64), full({1}, 0.2, DType::f64), 0.1));
  SHOW(hull.call);  // Hull: 4.76
  SHOW(hull.put);   // Hull: 0.81
  check("Hull's call", values(hull.call), {4.76}, 0, 0.005);
  check("Hull's put", values(hull.put), {0.81}, 0, 0.005);
  check("Hull's call by std::erfc", values(hull.call), {call_by_hand(42, 40, 0.5, 0.2, 0.1)}, 1e-7);

  std::cout << "\n# a book of " << kOptions << " options with random spot, strike, maturity and volatility\n";
  STEP(random::seed(2024));
  STEP(Array S = random::uniform({kOptions}, 50, 150, DType::f64));
  STEP(Array K = random::uniform({kOptions}, 60, 140, DType::f64));
  STEP(Array T = random::uniform({kOptions}, 0.1, 3, DType::f64));
  STEP(Array sigma = random::uniform({kOptions}, 0.1, 0.6, DType::f64));
  STEP(double r = 0.03);
  STEP(Prices book = black_scholes(S, K, T, sigma, r));
  STEP(eval({book.call, book.put}));
  SHOW(slice(book.call, 0, 0, 5));  // the first five calls
  SHOW(sum(book.call));
  SHOW(max(abs(book.call - book.put - (S - K * exp(-r * T)))));  // put-call parity
  std::vector<double> by_hand;
  {
    const auto s = values(S), k = values(K), t = values(T), v = values(sigma);
    for (int i = 0; i < kOptions; ++i) by_hand.push_back(call_by_hand(s[i], k[i], t[i], v[i], r));
  }
  // The polynomial erfc is good to 1.2e-7 relative, so each N() to 1.2e-7 and
  // a price to 1.2e-7 (S + K) <= 3.5e-5 here.
  check("every call against std::erfc", values(book.call), by_hand, 0, 3.5e-5);
  double sum_by_hand = 0;
  for (double c : by_hand) sum_by_hand += c;
  check("sum of the calls", values(sum(book.call)), {sum_by_hand}, 0, 3.5e-5 * kOptions);
  check("put-call parity", values(book.call - book.put), values(S - K * exp(-r * T)), 0, 1e-9);

  std::cout << "\n# Monte Carlo: simulate S_T = S e^{(r - sigma^2/2) T + sigma sqrt(T) Z} for " << kPaths
            << " normal Z\n";
  STEP(double S0 = 100, K0 = 110, T0 = 1, sigma0 = 0.25);
  STEP(Array Z = random::normal({kPaths}, 0, 1, DType::f64));
  STEP(Array S_T = S0 * exp((r - sigma0 * sigma0 / 2) * T0 + sigma0 * std::sqrt(T0) * Z));
  STEP(Array payoff = std::exp(-r * T0) * maximum(S_T - K0, 0));
  STEP(Array price = mean(payoff));
  STEP(Array standard_error = sqrt(mean(payoff * payoff) - price * price) / std::sqrt(kPaths));
  SHOW(price);
  SHOW(standard_error);
  const double exact = call_by_hand(S0, K0, T0, sigma0, r);
  std::cout << "    closed form: " << exact << "\n";
  // Four standard errors: a correct simulation lands outside once in ~16,000 seeds.
  check("Monte Carlo within 4 standard errors", price.item<double>(), exact, 0,
        4 * standard_error.item<double>());
  return example::finish();
}
