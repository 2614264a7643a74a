// Special functions no math library offers on every backend: digamma,
// trigamma, erfinv, ndtri, log_ndtr, i0, i1 (arrayjit/ops.def's rows marked
// `calls`), and logaddexp. base/semantics.hpp includes this file inside
// namespace aj::sem, after `math::`; the same three compilers read it (host
// C++, the host JIT's bitcode, NVRTC), so it follows semantics.hpp's rules:
// every function AJ_HD, no standard library, math through `math::` only.
//
// Each is computed in f64 (f32 and halves round its result once): from the
// library functions, so the backends differ only where those do. Worst
// errors against a 113-bit reference are in docs/semantics.md, measured by
// tests/test_special_functions.cpp. Loops have fixed trip counts and branch
// on ranges only, so the loop vectorizer can still widen a kernel.
#pragma once

namespace special {

constexpr double kPi = 3.14159265358979323846;
constexpr double kSqrtPi = 1.77245385090551602730;
constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kLn2 = 0.69314718055994530942;

AJ_HD double quiet_nan() { return half_detail::f64_of(0x7ff8000000000000ull); }

// ---- tables (tools/special_coefficients.cpp computes them in quad precision) ----------------
// Chebyshev coefficients: f(t) = c0/2 + sum_k c_k T_k(t) for t in [-1, 1].
// CUDA reads a table from constant memory; the other compilers fold its
// entries into the code (chebyshev() below indexes it with constants only).
#if defined(AJ_SEM_CUDA)
#define AJ_TABLE __constant__ const
#else
#define AJ_TABLE constexpr
#endif
constexpr double kInvSqrt2_hi = 0x1.6a09e667f3bcdp-1, kInvSqrt2_lo = -0x1.bdd3413b26456p-55;  // 0.707106781186547572737
constexpr double kDigammaZero_hi = 0x1.762d86356be3fp+0, kDigammaZero_lo = 0x1.b8645d1e297fcp-54;  // 1.46163214496836224576
AJ_TABLE double kDigammaOverZero[24] = {
    0x1.f796856bd457ep+0,  // 1.9671405208831341
    -0x1.d106f9c73a335p-3,  // -0.22706408633464439
    0x1.115ba7405c9ebp-5,  // 0.033368899023930108
    -0x1.5ca815e4c9875p-8,  // -0.0053200772715965476
    0x1.ccc75b4c88c71p-11,  // 0.00087886569378205052
    -0x1.35d295b0b49a5p-13,  // -0.00014773492650606044
    0x1.a47236f11cdebp-16,  // 2.5060543468359146e-05
    -0x1.1eb22d7775816p-18,  // -4.2721034029993324e-06
    0x1.88107f22d99ccp-21,  // 7.3027692724659233e-07
    -0x1.0c7f58df91757p-23,  // -1.2502886813559594e-07
    0x1.7014300009a04p-26,  // 2.1425009322359472e-08
    -0x1.f8da9c4298c22p-29,  // -3.6732959185651789e-09
    0x1.5a54a35b8fd9dp-31,  // 6.2997172361089314e-10
    -0x1.db3ff584a85edp-34,  // -1.080593028883266e-10
    0x1.461ccfaaeb343p-36,  // 1.8537351920536379e-11
    -0x1.bf940df19b079p-39,  // -3.1802353658255301e-12
    0x1.33275f92562bap-41,  // 5.4561475703227946e-13
    -0x1.a594e7215738fp-44,  // -9.3609931310364384e-14
    0x1.2152a884f7bdap-46,  // 1.606064636295075e-14
    -0x1.8d1d991c8f9c4p-49,  // -2.7555431377438815e-15
    0x1.1089124bb5df7p-51,  // 4.7277361786019116e-16
    -0x1.761380b8f00cep-54,  // -8.1114842034650894e-17
    0x1.00b98a8f0aa04p-56,  // 1.3917077694741539e-17
    -0x1.606028e8bf55ep-59,  // -2.3877901082188633e-18
};
AJ_TABLE double kCotMinusPole[16] = {
    -0x1.cf734349ec67p+2,  // -7.2414100858601245
    -0x1.69d2ca14d9dd2p-2,  // -0.35334316017403211
    -0x1.8af2294ec9d34p-6,  // -0.024105587329498593
    -0x1.c14adca5a5c76p-10,  // -0.0017139146015432683
    -0x1.018818b7b54f3p-13,  // -0.00012280064924278348
    -0x1.27b4ada0ed65ap-17,  // -8.8127188194550355e-06
    -0x1.53a851a5be138p-21,  // -6.3266138702805342e-07
    -0x1.862c17bf8de4ep-25,  // -4.542202658132567e-08
    -0x1.c0351b64f7db2p-29,  // -3.2611384031441239e-09
    -0x1.0170409c60be2p-32,  // -2.3413893894335092e-10
    -0x1.27bb6136d04cbp-36,  // -1.6810415224863868e-11
    -0x1.53b8b852727d1p-40,  // -1.2069334421888726e-12
    -0x1.86412b59ee0d4p-44,  // -8.6653921313610564e-14
    -0x1.c04de50911753p-48,  // -6.2214716164022107e-15
    -0x1.017e9065b642ap-51,  // -4.4668156470190397e-16
    -0x1.27cbd6e392a04p-55,  // -3.2070293436425343e-17
};
AJ_TABLE double kCscSquaredMinusPole[17] = {
    0x1.1bd9ec82757c7p+3,  // 8.8703520343805291
    0x1.468da466c3d07p+0,  // 1.2755987883463733
    0x1.2561973b77a58p-3,  // 0.14325254583578118
    0x1.cfd50cbc107a3p-7,  // 0.01415503618057185
    0x1.544547b83cb8bp-10,  // 0.0012980294250694881
    0x1.dc177b4400e77p-14,  // 0.00011350911250934148
    0x1.4274ac13e12ffp-17,  // 9.609930238027498e-06
    0x1.aabac887c8b77p-21,  // 7.9484586110556965e-07
    0x1.1572ad4a49586p-24,  // 6.4598386338522783e-08
    0x1.63e0272433f5dp-28,  // 5.1786715230357161e-09
    0x1.c37f2336f9e56p-32,  // 4.1063379383963497e-10
    0x1.1bd8640228e3bp-35,  // 3.2269471831527408e-11
    0x1.623b2145c6838p-39,  // 2.516962470970296e-12
    0x1.b7469b8932eebp-43,  // 1.9507764771997655e-13
    0x1.0ee448768fd64p-46,  // 1.5037511830165452e-14
    0x1.4c889ee7edbd2p-50,  // 1.1537079441539036e-15
    0x1.968526bd82e3ep-54,  // 8.81499999686369e-17
};
AJ_TABLE double kI0Mid[29] = {
    0x1.9c652f2e64653p-1,  // 0.80545947495756776
    -0x1.167c43aa3aa1ep-9,  // -0.0021246750449013382
    0x1.391f87f818fffp-11,  // 0.00059723504729136667
    -0x1.60ed28b6b2e91p-13,  // -0.00016828842281878647
    0x1.8ee4dcab2fe44p-15,  // 4.7551869408743219e-05
    -0x1.c44becd7b16ap-17,  // -1.3479488571897888e-05
    0x1.01638bbeb14b3p-18,  // 3.8353927595591784e-06
    -0x1.263f10f731a59p-20,  // -1.0961530827899707e-06
    0x1.5224cb7b1444p-22,  // 3.1492088909286023e-07
    -0x1.86f3853badcaep-24,  // -9.1025431576670047e-08
    0x1.c71424e5aa78bp-26,  // 2.6489065960373315e-08
    -0x1.0ac174a08c986p-27,  // -7.7636122540282461e-09
    0x1.3adba1090f96p-29,  // 2.2908929237390821e-09
    -0x1.75a8acd9d4482p-31,  // -6.7968155689477928e-10
    0x1.bcb9e9bcdd2fap-33,  // 2.0223807169032792e-10
    -0x1.086e6cc1e25cdp-34,  // -6.0124727271072363e-11
    0x1.38b3bf35f78b4p-36,  // 1.7775058517792839e-11
    -0x1.6db55d0a20727p-38,  // -5.1970296641596849e-12
    0x1.a479b5d36fac1p-40,  // 1.4938288142239779e-12
    -0x1.d84989a814d7p-42,  // -4.1947534932032763e-13
    0x1.015b4731fdc7ep-43,  // 1.1428926920575354e-13
    -0x1.0dfe183e00ebap-45,  // -2.9975195371028082e-14
    0x1.0de0e491ca777p-47,  // 7.4906327722146271e-15
    -0x1.fa2e4c4a80dc7p-50,  // -1.7561676127511419e-15
    0x1.b1251aba25278p-52,  // 3.7569334715578507e-16
    -0x1.3d71c50fd5ecfp-54,  // -6.8834784481614344e-17
    0x1.3f4737d7151f7p-57,  // 8.6540528379301624e-18
    0x1.1cd89e66e805fp-61,  // 4.825481767340937e-19
    -0x1.03cd123f0eabdp-60,  // -8.8024022907714037e-19
};
AJ_TABLE double kI1Mid[29] = {
    0x1.8d252959b9edep-1,  // 0.7756741449383886
    0x1.9012b81517353p-8,  // 0.0061046313686262286
    -0x1.b871fb8784265p-10,  // -0.0016801652690256127
    0x1.e5a24ef22af88p-12,  // 0.00046313668930041867
    -0x1.0c326d9aff374p-13,  // -0.00012788628814055689
    0x1.28d3c4f7eda6p-15,  // 3.5384562522212904e-05
    -0x1.494a25ebd139ep-17,  // -9.8135960439145886e-06
    0x1.6e52fe7f88f2bp-19,  // 2.7293279456652511e-06
    -0x1.98e1aedd8c77dp-21,  // -7.6160128132370977e-07
    0x1.ca2f3a4500fa1p-23,  // 2.133587761189386e-07
    -0x1.01e49fbb2241p-24,  // -6.004540768952688e-08
    0x1.23cd081b4e901p-26,  // 1.6985048129452027e-08
    -0x1.4befe5ae88a36p-28,  // -4.8303205172955795e-09
    0x1.7b827843925e9p-30,  // 1.380648054991172e-09
    -0x1.b3a60f1ab9e2p-32,  // -3.9622015535754682e-10
    0x1.f52285f872e36p-34,  // 1.1394487426688254e-10
    -0x1.20030b67f620bp-35,  // -3.2743161317883297e-11
    0x1.499a20e24bcf8p-37,  // 9.3678540983305179e-12
    -0x1.75fc1ffe3d2a6p-39,  // -2.6573222781414211e-12
    0x1.a2dc413d8bca7p-41,  // 7.440454838731369e-13
    -0x1.ccf6050c8dc33p-43,  // -2.0470781271973224e-13
    0x1.f03643bc3b192p-45,  // 5.5090595536355676e-14
    -0x1.040c08c66d0a2p-46,  // -1.4435508838140927e-14
    0x1.08178239a8aap-48,  // 3.6650103900264386e-15
    -0x1.0265cc8aae125p-50,  // -8.964969471952179e-16
    0x1.e39c8a72c0595p-53,  // 2.0973305017739226e-16
    -0x1.ac2c5e77145d6p-55,  // -4.6422643986707899e-17
    0x1.601ef891fec3ap-57,  // 9.5442582976885215e-18
    -0x1.031f0b1d9e4efp-59,  // -1.7558739792146784e-18
};
#undef AJ_TABLE

// Clenshaw's recurrence for the expansions above, unrolled by templates (so
// no loop is left inside a kernel's element loop for the vectorizer).
template <int K>
AJ_HD void clenshaw_steps(const double* c, double t2, double& b1, double& b2) {
  if constexpr (K >= 1) {
    const double b0 = t2 * b1 - b2 + c[K];
    b2 = b1;
    b1 = b0;
    clenshaw_steps<K - 1>(c, t2, b1, b2);
  }
}
// f(0), f(1), ..., f(N - 1), unrolled by templates: a loop left inside a
// kernel's element loop is the loop the vectorizer would widen (and cannot),
// so the element loop would stay scalar.
template <int N, int I = 0, class F>
AJ_HD void unrolled(F&& f) {
  if constexpr (I < N) {
    f(I);
    unrolled<N, I + 1>(f);
  }
}

template <int N>
AJ_HD double chebyshev(const double (&c)[N], double t) {
  double b1 = 0.0, b2 = 0.0;
  clenshaw_steps<N - 1>(c, 2.0 * t, b1, b2);
  return t * b1 - b2 + 0.5 * c[0];
}

// ---- the gamma family ------------------------------------------------------------------------
// digamma (psi, lgamma's derivative) and trigamma (psi's). For x >= 10 the
// asymptotic series (Bernoulli numbers B2..B14 for psi, to B20 for psi1),
// below an ulp there. digamma on [1, 2) is (x - x0) g(x), x0 its zero as a
// double-double and g a Chebyshev expansion: relatively accurate at the zero
// too; [2, 10) comes down to it by psi(x) = psi(x - 1) + 1/(x - 1) (exact
// subtractions, positive terms), (0, 1) up by psi(x) = psi(x + 1) - 1/x.
// trigamma sums 1/(x + k)^2 up to 10. For x <= 0 the reflections
// psi(x) = psi(1 - x) - pi cot(pi x) and psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x),
// with pi x reduced to [-pi/2, pi/2] first (x - round(x) is exact), then
// pi cot and pi^2 csc^2 as their poles plus Chebyshev expansions.
// Poles: digamma(0) = -inf (PyTorch, SciPy), NaN at the negative integers;
// trigamma +inf at all of them.
//
// Like everything below, each range's formula is computed for every x and
// the right one selected (no branch on the value), so the loop vectorizer
// widens a kernel: a select costs the other formulas, a branch costs the
// vector width.
AJ_HD double digamma_positive(double x) {
  const bool small = x < 1.0;
  const double result = small ? -1.0 / x : 0.0;
  x = small ? x + 1.0 : x;
  const double z = 1.0 / (x * x);
  const double tail = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 -
                                                                            z * (691.0 / 32760 - z / 12.0))))));
  const double far = math::log(x) - 0.5 / x - tail;  // x >= 10
  double y = x, sum = 0.0;
  unrolled<8>([&](int) {
    const bool down = y >= 2.0;
    y -= down ? 1.0 : 0.0;
    sum += down ? 1.0 / y : 0.0;
  });
  const double near = sum + ((y - kDigammaZero_hi) - kDigammaZero_lo) * chebyshev(kDigammaOverZero, 2.0 * y - 3.0);
  return result + (x >= 10.0 ? far : near);
}

// The reflections' pi cot(pi r) and pi^2 / sin^2(pi r) for |r| <= 1/2, as
// their poles plus Chebyshev expansions in r^2 (tables above): no library
// tan or sin (the host JIT's are 3.5-ulp functions), one formula everywhere.
AJ_HD double pi_cot_pi(double r) { return 1.0 / r + r * chebyshev(kCotMinusPole, 8.0 * (r * r) - 1.0); }
AJ_HD double pi2_csc2_pi(double r) { return 1.0 / (r * r) + chebyshev(kCscSquaredMinusPole, 8.0 * (r * r) - 1.0); }

AJ_HD double digamma(double x) {
  const bool neg = x <= 0.0;
  const double cot = pi_cot_pi(x - math::nearbyint(x));
  const double pos = digamma_positive(neg ? 1.0 - x : x);
  double v = neg ? pos - cot : pos;
  const bool pole = neg && x == math::floor(x);  // -inf too
  v = pole ? (x == 0.0 ? -infinity<double>() : quiet_nan()) : v;
  return math::isnan(x) || x == infinity<double>() ? x : v;
}

AJ_HD double trigamma(double x) {
  const bool neg = x <= 0.0;
  const double reflected = pi2_csc2_pi(x - math::nearbyint(x));
  double y = neg ? 1.0 - x : x, sum = 0.0;
  unrolled<10>([&](int) {
    const bool small = y < 10.0;
    sum += small ? 1.0 / (y * y) : 0.0;
    y += small ? 1.0 : 0.0;
  });
  const double z = 1.0 / (y * y);
  const double tail =
      1.0 / y + 0.5 * z +
      z / y * (1.0 / 6 - z * (1.0 / 30 - z * (1.0 / 42 - z * (1.0 / 30 - z * (5.0 / 66 - z * (691.0 / 2730 -
                   z * (7.0 / 6 - z * (3617.0 / 510 - z * (43867.0 / 798 - z * 174611.0 / 330)))))))));
  double v = neg ? reflected - (sum + tail) : sum + tail;
  const bool pole = neg && x == math::floor(x);
  v = pole ? (x == -infinity<double>() ? quiet_nan() : infinity<double>()) : v;
  v = x == infinity<double>() ? 0.0 : v;
  return math::isnan(x) ? x : v;
}

// ---- the error function's inverses ----------------------------------------------------------
// log(erfc(x)): the library's erfc until it nears underflow (x = 25, where
// erfc is 1e-274), then the asymptotic series
// erfc(x) = e^(-x^2) / (x sqrt(pi)) * (1 - w + 3w^2 - 15w^3 ...), w = 1 / (2x^2),
// whose eighth term is below 1e-18 there. -inf at +inf.
AJ_HD double log_erfc(double x) {
  const double direct = math::log(math::erfc(x));
  const double w = 1.0 / (2.0 * x * x);
  const double s = 1.0 - w * (1.0 - w * (3.0 - w * (15.0 - w * (105.0 - w * (945.0 - w * (10395.0 - w * 135135.0))))));
  const double far = -x * x - math::log(x * kSqrtPi) + math::log(s);
  return x < 25.0 ? direct : far;
}

// The starting point of both inverses: Winitzki's closed form (2008),
// erf(x)^2 ~ 1 - exp(-x^2 (4/pi + a x^2) / (1 + a x^2)), a = 0.147, solved
// for x; within 0.4% of erfinv everywhere. l = log(1 - y^2), passed in so
// that the tail computes it without cancellation (from q = 1 - |y|).
AJ_HD double winitzki(double l) {
  constexpr double a = 0.147;
  const double b = 2.0 / (kPi * a) + 0.5 * l;
  return math::sqrt(math::sqrt(b * b - l / a) - b);
}

// erfinv(y) for |y| <= 1/2: the Maclaurin series' first five terms (within
// 5e-5 there), then two Halley steps on erf(x) = y (cubic: below an ulp).
// Odd in y, so -0 stays -0.
AJ_HD double erfinv_central(double y) {
  const double c = 0.5 * kSqrtPi, y2 = y * y;
  double x = c * y *
             (1.0 + y2 * (kPi / 12 + y2 * (7.0 * kPi * kPi / 480 +
                                           y2 * (127.0 * kPi * kPi * kPi / 40320 +
                                                 y2 * (4369.0 * kPi * kPi * kPi * kPi / 5806080)))));
  unrolled<2>([&](int) {
    // f = erf(x) - y, f' = 2/sqrt(pi) e^(-x^2), f'' = -2x f': Halley's step f / (f' + x f).
    const double f = math::erf(x) - y;
    x -= f / ((2.0 / kSqrtPi) * math::exp(-x * x) + x * f);
  });
  return x;
}

// The x > 0 with erfc(x) = q, for 0 < q <= 1/2 (x >= 0.4769): Halley's method
// on g(x) = log(erfc(x)) - log(q), which is nearly -x^2 (so the steps behave
// from q = 1/2 to the smallest subnormal, where x = 27.2). With
// h = 2/sqrt(pi) e^(-x^2) / erfc(x) (= 2/sqrt(pi) e^(-x^2 - log erfc x), finite
// where both underflow): g' = -h, g'' = h (2x - h), and Halley's step is
// x + g / (h - g (2x - h) / 2). Three steps from Winitzki's start.
AJ_HD double erfc_inverse_tail(double q) {
  const double lq = math::log(q);
  double x = winitzki(lq + math::log(2.0 - q));  // 1 - y^2 = q (2 - q)
  unrolled<3>([&](int) {
    const double le = log_erfc(x);
    const double g = le - lq;
    const double h = (2.0 / kSqrtPi) * math::exp(-x * x - le);
    x += g / (h - 0.5 * g * (2.0 * x - h));
  });
  return x;
}

AJ_HD double erfinv(double y) {
  const double a = math::fabs(y);
  const double central = erfinv_central(y);
  const double tail = math::copysign(erfc_inverse_tail(1.0 - a), y);  // 1 - a: exact for a in [1/2, 1]
  double v = a <= 0.5 ? central : tail;
  v = a == 1.0 ? math::copysign(infinity<double>(), y) : v;
  v = a > 1.0 ? quiet_nan() : v;
  return math::isnan(y) ? y : v;
}

// ndtri(p): the standard normal's quantile, -sqrt(2) erfcinv(2p). 2p is exact,
// and so are 2 - 2p and 2p - 1 where they are taken; so no p loses its
// digits to a subtraction (p = 1e-300 is -37.0471...).
AJ_HD double ndtri(double p) {
  const double q = 2.0 * p;
  const bool lower = q < 1.0;
  const double t = erfc_inverse_tail(lower ? q : 2.0 - q);
  const double tail = lower ? -kSqrt2 * t : kSqrt2 * t;
  const double mid = kSqrt2 * erfinv_central(q - 1.0);
  double v = q < 0.5 || q > 1.5 ? tail : mid;
  v = p == 0.0 ? -infinity<double>() : p == 1.0 ? infinity<double>() : v;
  v = p < 0.0 || p > 1.0 ? quiet_nan() : v;
  return math::isnan(p) ? p : v;
}

// log_ndtr(z) = log(Phi(z)), Phi(z) = erfc(-z / sqrt(2)) / 2. Below z = -1,
// log_erfc (no underflow: log_ndtr(-40) = -804.608...), whose error relative
// to its size does not grow with z. Above, log1p of -Phi(-z): there erfc's
// slope is large (erfc(u) changes by 2u^2 of itself when u moves by one of
// its own ulps), so u = z / sqrt(2) is carried as a double-double (hi + lo)
// and erfc(hi + lo) = erfc(hi) (1 - lo h(hi)), h = 2/sqrt(pi) e^(-hi^2) / erfc(hi).
AJ_HD double log_ndtr(double z) {
  const double left = log_erfc(-z * kInvSqrt2_hi) - kLn2;
  const double hi = z * kInvSqrt2_hi;
  const double lo = math::fma(z, kInvSqrt2_hi, -hi) + z * kInvSqrt2_lo;
  const double e = math::erfc(hi);
  const double h = (2.0 / kSqrtPi) * math::exp(-hi * hi) / e;
  // erfc 0 (z = +inf, or past its underflow) or NaN: no correction (0 - 0 is +0).
  const double right = e > 0.0 ? math::log1p(-0.5 * e * (1.0 - lo * h)) : math::log1p(0.0 - 0.5 * e);
  return z < -1.0 ? left : right;
}

// ---- modified Bessel functions of the first kind, orders 0 and 1 ---------------------------
// Up to |x| = 8 the power series (x/2)^nu sum_k q^k / (k! (k + nu)!), q = x^2/4:
// positive terms, 26 of them. q is carried as q + q_lo (exact, by an fma) and
// the sum corrected by q_lo s'(q) (s' = sum k t_k / q): q's own rounding would
// otherwise grow k-fold in the k-th term. Up to 24, sqrt(x) e^-x i_nu(x) as a
// Chebyshev expansion in t = x/8 - 2. From 24 the asymptotic series
// e^x / sqrt(2 pi x) sum_k prod_j ((2j - 1)^2 - 4 nu^2) / (8 x j), 40 terms
// (its smallest term is about e^-2x). Past x = 700, e^x is e^(x/2) twice (i0
// is finite up to x = 713.98). i0 is even, i1 odd.
AJ_HD double bessel_i(int nu, double x) {
  const double a = math::fabs(x);
  // The series.
  const double hx = 0.5 * a;
  const double q = hx * hx, q_lo = math::fma(hx, hx, -q);
  double t = nu == 0 ? 1.0 : hx, s = t, s1 = 0.0;
  unrolled<26>([&](int i) {
    const int k = i + 1;
    t *= q * (1.0 / (static_cast<double>(k) * static_cast<double>(k + nu)));
    s += t;
    s1 += k * t;
  });
  const double series = q > 0.0 ? s + q_lo * (s1 / q) : s;
  // i_nu(x) e^-x: the Chebyshev expansion, and the asymptotic series (the
  // terms after the first summed apart, at their own scale, then 1 added).
  const double mid = (nu == 0 ? chebyshev(kI0Mid, 0.125 * a - 2.0) : chebyshev(kI1Mid, 0.125 * a - 2.0)) / math::sqrt(a);
  const double mu = 4.0 * nu * nu, w = 1.0 / (8.0 * a);
  double u = 1.0, tail = 0.0;
  unrolled<40>([&](int i) {
    const double m = 2.0 * i + 1.0;
    u *= (m * m - mu) * w * (1.0 / (i + 1));
    tail += u;
  });
  constexpr double kInvSqrt2Pi = 0.39894228040143267794;
  const double scaled = a <= 24.0 ? mid : (1.0 + tail) * kInvSqrt2Pi / math::sqrt(a);
  const double e = math::exp(0.5 * a);
  const double large = a < 700.0 ? math::exp(a) * scaled : e * (e * scaled);
  double r = a <= 8.0 ? series : large;  // NaN: large
  r = a == infinity<double>() ? a : r;
  return nu == 1 ? math::copysign(r, x) : r;
}

// ---- logaddexp ---------------------------------------------------------------------------------
// log(e^a + e^b) = max + log1p(e^-|a - b|) (log2 and 2^ for base 2): no
// overflow, and equal operands (+-inf included) give a + log(2).
template <class T> AJ_HD T logaddexp(T a, T b, bool base2) {
  if (a == b) return a + (base2 ? T(1) : T(kLn2));
  const T m = a > b ? a : b;
  const T d = -math::fabs(a - b);  // NaN when either is: so is the result
  const T r = base2 ? math::log1p(math::exp2(d)) * T(1.0 / kLn2) : math::log1p(math::exp(d));
  return m + r;
}

}  // namespace special
