// Generates the constants of base/special_math.hpp that are not closed
// forms: Chebyshev coefficients of digamma near its positive zero, of the
// reflection formulas' cot and csc^2 without their poles and of the scaled
// Bessel functions i0 and i1 on [8, 24], and double-double splits of
// irrational constants. Everything is computed here in 113-bit quad
// precision (GCC's __float128, libquadmath) from the functions' series, so
// the tables can be checked and regenerated:
//
//   g++ -O2 -std=gnu++20 tools/special_coefficients.cpp -lquadmath -o /tmp/gen && /tmp/gen
//
// A Chebyshev expansion f(t) = c0/2 + sum_k c_k T_k(t) on t in [-1, 1] is
// taken from f at the N Chebyshev nodes by the discrete cosine transform,
// and cut where the coefficients fall below 2^-60 of the largest.
#include <quadmath.h>

#include <cstdio>
#include <functional>
#include <vector>

using Q = __float128;

namespace {

const double kB2k[] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6, -3617.0 / 510,
                       43867.0 / 798, -174611.0 / 330};

Q digamma(Q x) {  // x > 0
  Q result = 0;
  while (x < 30) result -= 1 / x, x += 1;
  Q s = 0, xp = x * x;
  for (int k = 1; k <= 10; ++k, xp *= x * x) s += Q(kB2k[k - 1]) / (2 * k * xp);
  return result + logq(x) - 1 / (2 * x) - s;
}
Q trigamma(Q x) {  // x > 0
  Q sum = 0;
  while (x < 30) sum += 1 / (x * x), x += 1;
  Q t = 1 / x + 1 / (2 * x * x), xp = x * x * x;
  for (int k = 1; k <= 10; ++k, xp *= x * x) t += Q(kB2k[k - 1]) / xp;
  return sum + t;
}
Q bessel_i(int nu, Q x) {  // power series, x >= 0
  const Q q = x * x / 4;
  Q t = nu == 0 ? Q(1) : x / 2, s = t;
  for (int k = 1; k < 5000 && t > s * Q(1e-40); ++k) {
    t *= q / (Q(k) * Q(k + nu));
    s += t;
  }
  return s;
}

std::vector<Q> chebyshev(const std::function<Q(Q)>& f, int n) {
  std::vector<Q> fx(n), c(n);
  for (int j = 0; j < n; ++j) fx[j] = f(cosq(M_PIq * (j + Q(0.5)) / n));
  for (int k = 0; k < n; ++k) {
    Q s = 0;
    for (int j = 0; j < n; ++j) s += fx[j] * cosq(M_PIq * k * (j + Q(0.5)) / n);
    c[k] = 2 * s / n;
  }
  Q big = 0;
  for (Q v : c) big = fabsq(v) > big ? fabsq(v) : big;
  while (c.size() > 1 && fabsq(c.back()) < big * Q(0x1p-60)) c.pop_back();
  return c;
}

void print(const char* name, const std::vector<Q>& c) {
  std::printf("constexpr double %s[%zu] = {\n", name, c.size());
  for (Q v : c) std::printf("    %a,  // %.17g\n", static_cast<double>(v), static_cast<double>(v));
  std::printf("};\n");
}
void print_split(const char* name, Q v) {
  const double hi = static_cast<double>(v), lo = static_cast<double>(v - hi);
  std::printf("constexpr double %s_hi = %a, %s_lo = %a;  // %.21g\n", name, hi, name, lo, static_cast<double>(v));
}

}  // namespace

int main() {
  print_split("kInvSqrt2", 1 / sqrtq(2));
  // digamma's positive zero, by Newton's method (trigamma is its slope).
  Q x0 = 1.4616;
  for (int i = 0; i < 20; ++i) x0 -= digamma(x0) / trigamma(x0);
  print_split("kDigammaZero", x0);
  // digamma(x) / (x - x0) on x in [1, 2]: t = 2x - 3.
  print("kDigammaOverZero", chebyshev([&](Q t) { const Q x = (t + 3) / 2; return digamma(x) / (x - x0); }, 60));
  // The reflections' pi cot(pi r) = 1/r + r c(r^2) and pi^2 / sin^2(pi r) =
  // 1/r^2 + s(r^2), for |r| <= 1/2: s = r^2 in [0, 1/4], t = 8s - 1.
  print("kCotMinusPole", chebyshev([](Q t) {
          const Q s = (t + 1) / 8, r = sqrtq(s);
          return (M_PIq / tanq(M_PIq * r) - 1 / r) / r;
        }, 60));
  print("kCscSquaredMinusPole", chebyshev([](Q t) {
          const Q s = (t + 1) / 8, r = sqrtq(s), sn = sinq(M_PIq * r);
          return M_PIq * M_PIq / (sn * sn) - 1 / s;
        }, 60));
  // sqrt(x) e^-x i0(x) and sqrt(x) e^-x i1(x) on [8, 24]: t = (x - 16) / 8.
  print("kI0Mid", chebyshev([](Q t) { const Q x = 8 * t + 16; return sqrtq(x) * expq(-x) * bessel_i(0, x); }, 80));
  print("kI1Mid", chebyshev([](Q t) { const Q x = 8 * t + 16; return sqrtq(x) * expq(-x) * bessel_i(1, x); }, 80));
  return 0;
}
