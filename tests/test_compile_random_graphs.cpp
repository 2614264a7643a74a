// aj::compile on the random graphs of the differential tier. Each program of tests/random_graph.hpp, in compile mode
// (tests/random_graph_compile.hpp: its inputs are its arguments, nothing is
// evaluated mid-program, and it is one fixed function of its arguments at
// any extents), is compiled once and called in the rounds below; each
// call's results must equal, bit for bit (NaN where NaN, signed zeros as
// they are), those of the uncompiled call of the same function on the same
// arguments, and a call must raise an aj::Error exactly when the uncompiled
// call raises one (ops whose results are not returned check their shapes
// too).
//
//   round      extents          arguments
//   trace      recorded         new data; some are views at an offset into a
//                               longer buffer (along the first axis: contiguous
//                               at an offset; along the last: strided)
//   replay     recorded         new data, the same layouts: counts().replays grows
//   offset     recorded         the same buffers, the views at another offset
//   donate     recorded         contiguous copies, some passed in an rvalue
//                               vector (donated), the uncompiled call on copies
//   2e+1       e -> 2e + 1      every argument extent other than 0 and 1 (which
//   e+3        e -> e + 3       are part of the signature) changed: the first
//   3e-1       e -> 3e - 1      call traces and checks the template, later ones
//   e+5        e -> e + 5       run from it, unplanned where the kept plan holds
//   2e         e -> 2e
//   e-1 donated e -> max(2, e-1) contiguous copies, some donated
//   2e+1 again as 2e+1          a replay of the program kept at those extents
//
// One program in seven has a matmul of about 2^14 result elements with an
// epilogue (both sides of kEpilogueMinElements, and crossing it at the new
// extents). A program whose recording skipped a step (a user error at trace
// time) is a function that branched on an error: it runs the rounds at its
// recorded extents only.
//
// Environment: AJ_TEST_LONG=1 runs 10,000 programs (default 1,000);
// AJ_CRG_SEED=<n> runs that seed alone and prints its program and each
// round; AJ_CRG_COUNT=<n> runs n programs; AJ_CRG_STEPS=<k> caps the steps
// of a program (shrinking a failing seed by hand); AJ_CRG_ROUNDS=<list>
// runs only the rounds named (comma-separated, as in the table above: a
// failing round alone); AJ_CRG_RETURN_ALL=1 makes every value a program
// made one of its results (a failure that then goes away is one of an op
// whose result is not returned).
#include <doctest/doctest.h>

#include <arrayjit/arrayjit.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "tests/random_graph.hpp"

namespace {

using aj::Array;
using aj::DType;
using ajtest::Dims;
using ajtest::RandomGraph;

constexpr std::uint64_t kSeedBase = 0xc0a1000;
constexpr int kDefaultPrograms = 1000;
constexpr int kLongPrograms = 10000;
// Seeds past the default count that found a bug in long mode (each with a
// reduced test case below): run in every mode.
constexpr std::uint64_t kFoundSeeds[] = {201990767, 201991283};
// Steps per program: as many as the random-graph tier's (each program here
// is traced, planned and run some twenty times; the kernels are those of a
// few programs of the tier, compiled once).
constexpr int kSteps = RandomGraph::kMaxSteps;

bool long_mode() {
  const char* s = std::getenv("AJ_TEST_LONG");
  return s && *s && std::string(s) != "0";
}

std::optional<long long> env_int(const char* name) {
  const char* s = std::getenv(name);
  if (!s || !*s) return std::nullopt;
  return std::strtoll(s, nullptr, 0);
}

// ---- one program and its arguments ------------------------------------------------

struct Case {
  std::uint64_t seed = 0;
  int steps = kSteps;
  bool return_everything = false;  // AJ_CRG_RETURN_ALL
  RandomGraph::Recording rec;
  std::vector<int> view;       // per argument: 0 its own buffer, 1 a slice along the first axis, 2 along the last
  std::vector<bool> donated;   // per argument: passed in the second (donatable) vector
};

Case make_case(std::uint64_t seed, int steps) {
  Case c;
  c.seed = seed;
  c.steps = steps;
  c.return_everything = env_int("AJ_CRG_RETURN_ALL").value_or(0) != 0;
  c.rec = RandomGraph::record(seed, steps);
  std::mt19937_64 rng(seed ^ 0x5eed);
  for (const auto& a : c.rec.args) {
    const int u = std::uniform_int_distribution<int>(0, 9)(rng);
    const int rank = static_cast<int>(a.dims.size());
    c.view.push_back(rank == 0 ? 0 : u < 3 ? 1 : u < 4 && rank >= 2 ? 2 : 0);
    c.donated.push_back(std::uniform_int_distribution<int>(0, 1)(rng) == 1);
  }
  return c;
}

// The function compiled: the program on its arguments, split between a
// vector passed as it is and one that may be donated.
struct Program {
  const Case* c;
  std::vector<Array> operator()(const std::vector<Array>& kept, std::vector<Array> given) const {
    std::vector<Array> args;
    std::size_t k = 0, g = 0;
    for (bool d : c->donated) args.push_back(d ? std::move(given.at(g++)) : kept.at(k++));
    given.clear();
    RandomGraph graph(c->seed, c->steps, c->rec, std::move(args));
    if (c->return_everything) graph.return_everything();
    graph.build();
    std::vector<Array> out;
    for (const auto& o : graph.outputs()) out.push_back(o.array);
    return out;
  }
};

struct Args {
  std::vector<Array> kept, given;
};

// The arguments at extents `dims`, values drawn from `data_seed`; with
// `views`, those the case makes views are slices at `offset` (0 to 3) of a
// buffer 3 longer along the sliced axis.
Args make_args(const Case& c, const std::vector<Dims>& dims, std::uint64_t data_seed, int offset, bool views) {
  Args r;
  std::mt19937_64 rng(data_seed);
  for (std::size_t i = 0; i < c.rec.args.size(); ++i) {
    const Dims& d = dims[i];
    const int v = views ? c.view[i] : 0;
    Array a;
    if (v == 0) {
      a = RandomGraph::argument(c.rec.args[i], d, rng);
    } else {
      const std::size_t ax = v == 1 ? 0 : d.size() - 1;
      Dims big = d;
      big[ax] += 3;
      std::vector<aj::Slice> sl(ax + 1);
      sl[ax] = aj::Slice(offset, offset + d[ax]);
      a = aj::slice(RandomGraph::argument(c.rec.args[i], big, rng), sl).eval();
    }
    (c.donated[i] ? r.given : r.kept).push_back(std::move(a));
  }
  return r;
}

// ---- rounds -------------------------------------------------------------------

struct Round {
  const char* name;
  int map;  // the extent map: 0 the recorded extents, else below
  int data;
  int offset;
  bool views, donate;
  int replay_of = -1;  // the round whose signature this one repeats: a replay where that one returned
};
constexpr Round kRounds[] = {
    {"trace", 0, 0, 1, true, false},       {"replay", 0, 1, 1, true, false, 0}, {"offset", 0, 1, 3, true, false},
    {"donate", 0, 2, 0, false, true},      {"2e+1", 1, 3, 2, true, false},      {"e+3", 2, 4, 0, true, false},
    {"3e-1", 3, 5, 1, true, false},        {"e+5", 5, 6, 2, true, false},       {"2e", 6, 7, 3, true, false},
    {"e-1 donated", 4, 8, 0, false, true}, {"2e+1 again", 1, 9, 2, true, false, 4},
};
constexpr int kNumRounds = static_cast<int>(sizeof kRounds / sizeof kRounds[0]);

// Shifts keep the extents a constant apart (a pad, a slice) apart; 2e keeps
// sums (a concatenation); the others change extents by different factors and
// steps (a template cannot tell symbols apart that all change alike).
std::int64_t map_extent(int map, std::int64_t e) {
  if (e <= 1) return e;  // 0 and 1 are part of the signature
  switch (map) {
    case 1: return 2 * e + 1;
    case 2: return e + 3;
    case 3: return 3 * e - 1;
    case 4: return std::max<std::int64_t>(2, e - 1);
    case 5: return e + 5;
    case 6: return 2 * e;
    default: return e;
  }
}

// What one call gave: its results read back, or the aj::Error it raised.
struct Result {
  DType t = DType::f32;
  Dims shape;
  std::vector<double> f;
  std::vector<std::int64_t> i;
};
struct Outcome {
  bool raised = false;
  bool user_error = true;
  std::string error;
  std::vector<Result> results;
};

// (`dump`: where to put aj::dump of the results before they are evaluated.)
template <class F>
Outcome outcome_of(F&& call, std::string* dump = nullptr) {
  Outcome o;
  try {
    std::vector<Array> out = call();
    if (dump) *dump = aj::dump(out);
    aj::eval(out);
    for (const Array& a : out) {
      Result r;
      r.t = a.dtype();
      r.shape = a.shape().dims();
      RandomGraph::read(a, &r.f, &r.i);
      o.results.push_back(std::move(r));
    }
  } catch (const aj::Error& e) {
    o.raised = true;
    o.user_error = e.kind() == aj::Error::Kind::user;
    o.error = e.what();
    o.results.clear();
  } catch (const std::exception& e) {  // the generator's own checks (std::logic_error)
    o.raised = true;
    o.user_error = false;
    o.error = std::string("not an aj::Error: ") + e.what();
    o.results.clear();
  }
  return o;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// Where the compiled call's outcome differs from the uncompiled one's, or
// nullopt when it does not: results bit for bit (NaN matches NaN).
std::optional<std::string> difference(const Outcome& want, const Outcome& got) {
  if (want.raised && !want.user_error) return "the uncompiled call raised: " + first_line(want.error);
  if (got.raised && !got.user_error) return "the compiled call raised: " + first_line(got.error);
  if (want.raised != got.raised) {
    return want.raised ? "the uncompiled call raised (" + first_line(want.error) + ") but the compiled call returned"
                       : "the compiled call raised (" + first_line(got.error) + ") but the uncompiled call returned";
  }
  if (want.raised) return std::nullopt;
  if (want.results.size() != got.results.size())
    return std::to_string(got.results.size()) + " results, not " + std::to_string(want.results.size());
  for (std::size_t k = 0; k < want.results.size(); ++k) {
    const Result &w = want.results[k], &g = got.results[k];
    const std::string res = "result " + std::to_string(k) + ": ";
    if (w.t != g.t) return res + "dtype " + aj::dtype_name(g.t) + ", not " + aj::dtype_name(w.t);
    if (w.shape != g.shape) return res + "shape " + ajtest::dims_str(g.shape) + ", not " + ajtest::dims_str(w.shape);
    for (std::size_t e = 0; e < w.i.size(); ++e) {
      if (w.i[e] != g.i[e])
        return res + "element " + std::to_string(e) + " is " + std::to_string(g.i[e]) + ", uncompiled " + std::to_string(w.i[e]);
    }
    for (std::size_t e = 0; e < w.f.size(); ++e) {
      const bool same = std::isnan(w.f[e]) ? std::isnan(g.f[e]) : std::memcmp(&w.f[e], &g.f[e], sizeof(double)) == 0;
      if (!same) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "element %zu is %.17g, uncompiled %.17g", e, g.f[e], w.f[e]);
        return res + buf;
      }
    }
  }
  return std::nullopt;
}

// ---- a crash names the seed and round ---------------------------------------

class CrashNote {
 public:
  CrashNote() {
    for (int k = 0; k < kSignals; ++k) {
      struct sigaction sa {};
      sa.sa_handler = &CrashNote::on_signal;
      sigemptyset(&sa.sa_mask);
      sigaction(kSig[k], &sa, &saved_[k]);
    }
  }
  ~CrashNote() {
    for (int k = 0; k < kSignals; ++k) sigaction(kSig[k], &saved_[k], nullptr);
    note_[0] = 0;
  }
  CrashNote(const CrashNote&) = delete;
  CrashNote& operator=(const CrashNote&) = delete;
  static void set(std::uint64_t seed, const char* round) {
    std::snprintf(note_, sizeof note_,
                  "\n==== compile random graphs: crashed in seed %llu, round %s (rerun: AJ_CRG_SEED=%llu) ====\n",
                  static_cast<unsigned long long>(seed), round, static_cast<unsigned long long>(seed));
  }

 private:
  static constexpr int kSignals = 4;
  static constexpr int kSig[kSignals] = {SIGSEGV, SIGABRT, SIGBUS, SIGFPE};
  static void on_signal(int sig) {
    if (note_[0]) {
      ssize_t r = ::write(2, note_, std::strlen(note_));
      (void)r;
    }
    for (int k = 0; k < kSignals; ++k) {
      if (kSig[k] == sig) sigaction(sig, &saved_[k], nullptr);
    }
    std::raise(sig);
  }
  static inline char note_[200] = {};
  static inline struct sigaction saved_[kSignals] = {};
};

// ---- one program through every round ------------------------------------------

struct Failure {
  std::uint64_t seed;
  std::string round, what;
};

struct Tally {
  std::map<std::string, int> programs_using;  // op kind -> programs that used it
  int programs = 0, with_skips = 0, big_matmuls = 0;
  int calls = 0, raised_both = 0, ran_at_new_extents = 0, rounds_at_new_extents = 0;
  std::uint64_t traces = 0, replays = 0, new_extents = 0, unplanned = 0;
  std::uint64_t inplace_donated = 0;  // in-place reuses of donation rounds beyond the uncompiled call's
  int calls_reused_donated = 0;
  int epilogue_below = 0, epilogue_above = 0;  // big-matmul calls that ran, by result size
  int programs_unplanned = 0;
  std::map<std::string, int> extents_notes, plan_notes;  // why not generalized / planned -> programs
  std::vector<Failure> failures;
};

bool round_selected(const char* name) {
  const char* s = std::getenv("AJ_CRG_ROUNDS");
  if (!s || !*s) return true;
  std::stringstream list(s);
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item == name) return true;
  }
  return false;
}

void run_case(const Case& c, Tally& tally, bool verbose) {
  const auto& rec = c.rec;
  ++tally.programs;
  for (const auto& [op, n] : rec.used) {
    if (n > 0) ++tally.programs_using[op];
  }
  const bool at_new_extents = rec.skipped.empty();
  tally.with_skips += !at_new_extents;
  // The big matmul's operands, to tell on which side of 2^14 its product was.
  const int big = rec.big_matmul_arg;
  tally.big_matmuls += big >= 0;

  Program f{&c};
  auto cf = aj::compile(f);
  bool returned[kNumRounds] = {};  // the compiled call of round k returned
  for (int k = 0; k < kNumRounds; ++k) {
    const Round& r = kRounds[k];
    if (!round_selected(r.name)) continue;
    if (r.map != 0 && !at_new_extents) continue;
    CrashNote::set(c.seed, r.name);
    std::vector<Dims> dims;
    for (const auto& a : rec.args) {
      Dims d = a.dims;
      for (auto& e : d) e = map_extent(r.map, e);
      dims.push_back(std::move(d));
    }
    const std::uint64_t data_seed = c.seed * 16 + static_cast<std::uint64_t>(r.data);
    // The uncompiled call; for a donation round on arrays of their own.
    Args args = make_args(c, dims, data_seed, r.offset, r.views);
    const aj::Stats e0 = aj::stats();
    std::string dump;
    const Outcome want = outcome_of([&] { return f(args.kept, args.given); }, verbose ? &dump : nullptr);
    if (verbose) std::printf("round %s: the uncompiled call's graph (aj::dump)\n%s", r.name, dump.c_str());
    const std::uint64_t reused_uncompiled = aj::stats().inplace_reuses - e0.inplace_reuses;
    if (r.donate) args = make_args(c, dims, data_seed, r.offset, r.views);
    const aj::detail::CompiledCounts before = cf.counts();
    const aj::Stats s0 = aj::stats();
    const Outcome got = outcome_of([&] { return r.donate ? cf(args.kept, std::move(args.given)) : cf(args.kept, args.given); });
    const aj::detail::CompiledCounts after = cf.counts();
    ++tally.calls;
    if (r.donate && !got.raised) {
      // More buffers taken over in place than by the uncompiled call (whose
      // arguments the caller holds): donated ones.
      const std::uint64_t reused = aj::stats().inplace_reuses - s0.inplace_reuses;
      tally.inplace_donated += reused > reused_uncompiled ? reused - reused_uncompiled : 0;
      tally.calls_reused_donated += reused > reused_uncompiled;
    }
    if (r.map != 0) {
      ++tally.rounds_at_new_extents;
      tally.ran_at_new_extents += !want.raised;
    }
    tally.raised_both += want.raised && got.raised;
    if (big >= 0 && !want.raised) {
      const auto b = static_cast<std::size_t>(big);
      const std::int64_t n = dims[b][0] * dims[b + 1][1];
      (n >= (1 << 14) ? tally.epilogue_above : tally.epilogue_below)++;
    }
    std::optional<std::string> d = difference(want, got);
    returned[k] = !got.raised;
    if (!d && r.replay_of >= 0 && returned[r.replay_of] && !got.raised && after.replays != before.replays + 1) {
      d = std::string("not replayed, though round ") + kRounds[r.replay_of].name + " had this signature (counts: " +
          std::to_string(after.traces) + " traces, " + std::to_string(after.replays) + " replays)";
    }
    if (verbose) {
      std::printf("round %-12s %s; counts: traces %llu replays %llu new_extents %llu unplanned %llu%s%s\n", r.name,
                  want.raised ? ("raised: " + first_line(want.error)).c_str() : "ran",
                  static_cast<unsigned long long>(after.traces), static_cast<unsigned long long>(after.replays),
                  static_cast<unsigned long long>(after.new_extents), static_cast<unsigned long long>(after.unplanned),
                  d ? "\n  DIFFERS: " : "", d ? d->c_str() : "");
      std::fflush(stdout);
    }
    if (d) tally.failures.push_back({c.seed, r.name, *d});
  }
  const aj::detail::CompiledCounts n = cf.counts();
  tally.traces += n.traces;
  tally.replays += n.replays;
  tally.new_extents += n.new_extents;
  tally.unplanned += n.unplanned;
  tally.programs_unplanned += n.unplanned > 0;
  // A note's gist: after its first colon, numbers as '#', at most 100
  // characters (the numbers differ from program to program).
  auto gist = [](const std::string& note) {
    const std::size_t colon = note.find(": ");
    std::string g;
    for (std::size_t k = colon == std::string::npos ? 0 : colon + 2; k < note.size() && g.size() < 100; ++k) {
      const bool digit = note[k] >= '0' && note[k] <= '9';
      if (note[k] == '\n') break;
      if (!digit) g += note[k];
      else if (g.empty() || g.back() != '#') g += '#';
    }
    return g;
  };
  if (!cf.extents_note().empty()) ++tally.extents_notes[gist(cf.extents_note())];
  if (!cf.plan_note().empty()) ++tally.plan_notes[gist(cf.plan_note())];
  if (verbose) {
    std::printf("extents_note: %s\nplan_note: %s\n", cf.extents_note().c_str(), cf.plan_note().c_str());
  }
}

std::string report(const Tally& t, const std::map<std::uint64_t, const Case*>& cases, int verbose_failures) {
  std::ostringstream os;
  std::map<std::uint64_t, int> shown;
  for (const Failure& f : t.failures) {
    os << "seed " << f.seed << " round " << f.round << ": " << f.what << "  (rerun: AJ_CRG_SEED=" << f.seed << ")\n";
  }
  for (const Failure& f : t.failures) {
    if (static_cast<int>(shown.size()) >= verbose_failures || shown.count(f.seed)) continue;
    shown[f.seed] = 1;
    auto it = cases.find(f.seed);
    if (it != cases.end()) os << "---- program of seed " << f.seed << " ----\n" << it->second->rec.program;
  }
  return os.str();
}

}  // namespace

TEST_SUITE("compile") {

TEST_CASE("compile random graphs: every random program replays at its extents, new extents and offsets as uncompiled calls") {
  const int steps = static_cast<int>(env_int("AJ_CRG_STEPS").value_or(kSteps));
  Tally tally;
  CrashNote crash_note;
  if (auto one = env_int("AJ_CRG_SEED")) {
    const Case c = make_case(static_cast<std::uint64_t>(*one), steps);
    std::printf("seed %lld (%zu arguments; recording skipped %zu steps)\n%s", *one, c.rec.args.size(),
                c.rec.skipped.size(), c.rec.program.c_str());
    for (std::size_t i = 0; i < c.rec.args.size(); ++i) {
      std::printf("arg%zu: view %d, %s\n", i, c.view[i], c.donated[i] ? "donatable" : "kept");
    }
    std::fflush(stdout);
    run_case(c, tally, true);
    for (const Failure& f : tally.failures) FAIL_CHECK("seed " << f.seed << " round " << f.round << ": " << f.what);
    return;
  }
  const int n = static_cast<int>(env_int("AJ_CRG_COUNT").value_or(long_mode() ? kLongPrograms : kDefaultPrograms));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<Case>> failed_cases;
  std::map<std::uint64_t, const Case*> failed;
  std::vector<std::uint64_t> seeds;
  for (int k = 0; k < n; ++k) seeds.push_back(kSeedBase + static_cast<std::uint64_t>(k));
  for (std::uint64_t s : kFoundSeeds) {
    if (s >= kSeedBase + static_cast<std::uint64_t>(n)) seeds.push_back(s);
  }
  for (std::uint64_t seed : seeds) {
    auto c = std::make_unique<Case>(make_case(seed, steps));
    const std::size_t before = tally.failures.size();
    run_case(*c, tally, false);
    if (tally.failures.size() != before) {
      failed[c->seed] = c.get();
      failed_cases.push_back(std::move(c));
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::ostringstream cov;
  for (const auto& [op, programs] : tally.programs_using) cov << "  " << op << ": " << programs << "\n";
  auto most = [](const std::map<std::string, int>& notes) {
    std::vector<std::pair<int, std::string>> v;
    for (const auto& [note, k] : notes) v.emplace_back(-k, note);
    std::sort(v.begin(), v.end());
    std::ostringstream os;
    for (std::size_t k = 0; k < v.size() && k < 6; ++k) os << "  " << -v[k].first << "x " << v[k].second << "\n";
    return os.str();
  };
  MESSAGE(seeds.size() << " programs (at most " << steps << " steps) in " << secs << " s: " << tally.calls << " compiled calls, "
            << tally.traces << " traces, " << tally.replays << " replays, " << tally.new_extents
            << " at new extents without tracing (" << tally.unplanned << " not planned); " << tally.with_skips
            << " programs skipped a step when recorded (no rounds at new extents); " << tally.ran_at_new_extents
            << " of " << tally.rounds_at_new_extents << " calls at new extents ran (the others raised, compiled too: "
            << tally.raised_both << " raised both ways in all); " << tally.big_matmuls << " programs with a matmul near 2^14: "
            << tally.epilogue_below << " calls below, " << tally.epilogue_above << " at or above; "
            << tally.inplace_donated << " more in-place reuses in donated calls than uncompiled ("
            << tally.calls_reused_donated << " calls); " << tally.programs_unplanned << " programs ran a call unplanned; "
            << tally.failures.size() << " failures.\nWhy calls at new extents traced (extents_note, programs):\n"
            << most(tally.extents_notes) << "Why kept plans were refused (plan_note, programs):\n" << most(tally.plan_notes)
            << "Programs using each op:\n" << cov.str());
  const std::string why = report(tally, failed, 3);
  if (!why.empty()) std::fputs(("==== compile random graphs: failures ====\n" + why).c_str(), stderr);
  CHECK_MESSAGE(tally.failures.empty(), tally.failures.size() << " failing calls (listed above)");
  // What the tier is for: every kind of call happened.
  CHECK(tally.replays > 0);
  CHECK(tally.new_extents > 0);
  CHECK(tally.ran_at_new_extents > 0);
  CHECK(tally.calls_reused_donated > 0);
  CHECK(tally.epilogue_below > 0);
  CHECK(tally.epilogue_above > 0);
  if (n >= 1000) {
    CHECK(tally.unplanned > 0);
    CHECK(tally.programs_using["scatter"] > 0);
    CHECK(tally.programs_using["scatter_add"] > 0);
    CHECK(tally.programs_using["concatenate of computed pieces"] > 0);
    CHECK(tally.programs_using["stack of computed pieces"] > 0);
  }
}

// ---- what the programs found, reduced ------------------------------------------

TEST_CASE("compile random graphs (found): a call at new extents raises where an op whose result is not returned no longer fits") {
  // Seeds 201986131, 201986396 and some 230 more of 10,000: an op made while
  // traced whose result the function does not return checks its shapes when
  // the function runs uncompiled, and a compiled call run from the template
  // (not traced) returned instead of raising.
  auto f = [](const Array& x, const Array& y) {
    const Array unused = x + y;  // x and y must have one extent
    return x * 2.0f;
  };
  auto cf = aj::compile(f);
  for (auto [n, m] : std::vector<std::pair<std::int64_t, std::int64_t>>{{3, 3}, {5, 5}, {7, 7}, {7, 8}}) {
    const Array x = aj::from_vector(std::vector<float>(static_cast<std::size_t>(n), 1.0f), aj::Shape{n});
    const Array y = aj::from_vector(std::vector<float>(static_cast<std::size_t>(m), 2.0f), aj::Shape{m});
    CAPTURE(n);
    CAPTURE(m);
    bool uncompiled_raised = false, compiled_raised = false;
    try {
      f(x, y).eval();
    } catch (const aj::Error&) {
      uncompiled_raised = true;
    }
    try {
      cf(x, y).eval();
    } catch (const aj::Error&) {
      compiled_raised = true;
    }
    CHECK(uncompiled_raised == (n != m));
    CHECK(compiled_raised == uncompiled_raised);
  }
}

TEST_CASE("compile random graphs (found): a donated argument the function drops, at new extents") {
  // Seed 201991283: the call at new extents read the dropped donated
  // argument (f64[n]) in place of x, an internal error ("verify after
  // simplify: ... reduction axis out of range"; without AJ_VERIFY the JIT's
  // "generated invalid LLVM IR: ... fadd reassoc float %30, double %29").
  auto f = [](const Array& x, Array dropped) {
    dropped = Array();
    return aj::mean(aj::reshape(x, aj::Shape{1, 1}), aj::Axes(), true);
  };
  auto cf = aj::compile(f);
  const Array x = aj::from_vector(std::vector<float>{2.5f}, aj::Shape{});
  for (std::int64_t n : {3, 2, 4}) {
    CAPTURE(n);
    Array u = aj::from_vector(std::vector<double>(static_cast<std::size_t>(n), 1.0), aj::Shape{n});
    try {
      CHECK(cf(x, std::move(u)).item<float>() == 2.5f);
    } catch (const aj::Error& e) {
      FAIL_CHECK(std::string(e.what()));
    }
  }
}

TEST_CASE("compile random graphs (found): an evaluation of a mean read twice, one through a broadcast") {
  // Seeds 201990767, 201991665, 201992080: the uncompiled evaluation raised
  // "exec: a step input was not computed before its step" (no aj::compile
  // involved; the plan materializes the mean for two kernels and runs the
  // second from the sum in place of it).
  const Array x = aj::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}, aj::Shape{3, 1, 3});
  const Array h = aj::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, aj::Shape{3, 2, 1, 1});
  std::vector<Array> out;
  {
    const Array m = aj::mean(x, aj::Axes(std::vector<int>{0, 1}), true);  // f64[1, 1, 3]
    out = {aj::tanh(m), aj::expand_dims(m, -2) / h};
  }
  try {
    aj::eval(out);
  } catch (const aj::Error& e) {
    FAIL_CHECK(std::string(e.what()));
  }
}

}  // TEST_SUITE
