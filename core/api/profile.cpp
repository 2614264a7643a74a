// The public side of the profiler (arrayjit/profile.hpp): profiles, ranges,
// the Chrome trace, the summary, AJ_TRACE. The events are recorded by the
// layers below through base/profile.hpp.
#include "arrayjit/profile.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "arrayjit/dtype.hpp"
#include "base/profile.hpp"

namespace aj {

namespace prof = detail::prof;

namespace {

std::string where_of(const prof::Event& e) {
  if (!e.file || !*e.file || e.line == 0) return "";
  const char* slash = std::strrchr(e.file, '/');
  return std::string(slash ? slash + 1 : e.file) + ":" + std::to_string(e.line);
}

std::string ops_of(const prof::Event& e, const char* sep) {
  std::string s;
  for (int i = 0; i < e.nops; ++i) s += (i ? sep : "") + std::string(op_name(e.ops[i]));
  if (e.more_ops) s += std::string(sep) + "...";
  return s;
}

std::string shape_of(const prof::Event& e) {
  if (e.rank == 0 && e.nops == 0) return "";
  std::string s = "[", r;
  for (int i = 0; i < e.rank; ++i) {
    s += (i ? ", " : "") + std::to_string(e.shape[i]);
    if (e.reduced & (1u << i)) r += (r.empty() ? "" : ", ") + std::to_string(i);
  }
  s += "]";
  if (!r.empty()) s += " reducing [" + r + "]";
  return s;
}

ProfileEvent convert(const prof::Event& e, std::int64_t origin) {
  ProfileEvent p;
  p.category = prof::kind_name(e.kind);
  p.ops = ops_of(e, " ");
  p.where = where_of(e);
  p.step = e.step;
  p.thread = e.thread;
  p.start_us = static_cast<double>(e.start_ns - origin) / 1e3;
  p.duration_us = static_cast<double>(std::max<std::int64_t>(e.dur_ns, 0)) / 1e3;
  p.bytes = e.bytes;
  p.gb_per_s = e.dur_ns > 0 ? static_cast<double>(e.bytes) / static_cast<double>(e.dur_ns) : 0.0;
  const bool on_device = e.kind == prof::Kind::kernel || e.kind == prof::Kind::library ||
                         e.kind == prof::Kind::transfer || e.kind == prof::Kind::compile;
  if (on_device) p.device = Device{static_cast<Device::Kind>(e.device_kind), e.device_index}.str();
  switch (e.kind) {
    case prof::Kind::kernel:
      p.name = e.nops ? ops_of(e, "+") : std::string("copy");
      p.shape = shape_of(e);
      break;
    case prof::Kind::library:
      p.name = e.name;
      if (e.nops) p.name += " then " + ops_of(e, "+");  // a matmul with its epilogue, blockwise
      break;
    case prof::Kind::compile:
      p.name = "compile " + (e.nops ? ops_of(e, "+") : std::string(e.name));
      p.shape = shape_of(e);
      p.detail = e.name;
      break;
    case prof::Kind::plan:
      p.name = e.name;
      p.step = e.step;  // the plan's steps
      break;
    case prof::Kind::transfer:
      p.name = std::string("copy ") + e.name;
      p.detail = e.name;
      break;
    case prof::Kind::eval:
    case prof::Kind::range: p.name = e.name; break;
  }
  return p;
}

void json_string(std::ostream& os, const std::string& s) {
  os << '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': os << "\\\""; break;
      case '\\': os << "\\\\"; break;
      case '\n': os << "\\n"; break;
      case '\t': os << "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          os << buf;
        } else {
          os << c;
        }
    }
  }
  os << '"';
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

std::string chrome_json(const std::vector<ProfileEvent>& events,
                       const std::vector<std::pair<std::uint32_t, std::string>>& threads) {
  std::ostringstream os;
  os << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"arrayjit\"},\"traceEvents\":[\n";
  os << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"arrayjit\"}}";
  for (const auto& [tid, name] : threads) {
    const bool used = std::any_of(events.begin(), events.end(), [&](const ProfileEvent& e) { return e.thread == tid; });
    if (!used) continue;
    os << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" << tid << ",\"args\":{\"name\":";
    json_string(os, name);
    os << "}}";
  }
  for (const ProfileEvent& e : events) {
    os << ",\n{\"name\":";
    json_string(os, e.name);
    os << ",\"cat\":\"" << e.category << "\",\"ph\":\"X\",\"ts\":" << number(e.start_us)
       << ",\"dur\":" << number(e.duration_us) << ",\"pid\":1,\"tid\":" << e.thread << ",\"args\":{";
    bool first = true;
    auto field = [&](const char* key, const std::string& v) {
      if (v.empty()) return;
      os << (first ? "" : ",") << '"' << key << "\":";
      json_string(os, v);
      first = false;
    };
    auto num = [&](const char* key, const std::string& v) {
      os << (first ? "" : ",") << '"' << key << "\":" << v;
      first = false;
    };
    if (e.step >= 0) num(e.category == "plan" ? "steps" : "step", std::to_string(e.step));
    field("ops", e.ops);
    field("shape", e.shape);
    field("where", e.where);
    field("device", e.device);
    field("how", e.category == "compile" ? e.detail : "");
    if (e.bytes) {
      num("bytes", std::to_string(e.bytes));
      num("GB/s", number(e.gb_per_s));
    }
    os << "}}";
  }
  os << "\n]}\n";
  return os.str();
}

// The host's memory bandwidth: a STREAM triad (a = b + s * c) on one thread
// over arrays far larger than the caches, the best of a few passes, measured
// once. AJ_PEAK_GBPS replaces it.
double peak_gb_per_s() {
  static const double peak = [] {
    if (const char* v = std::getenv("AJ_PEAK_GBPS"); v && *v) {
      const double p = std::atof(v);
      if (p > 0) return p;
    }
    const std::size_t n = std::size_t{1} << 23;  // 32 MiB per array
    std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
    double best = 1e30;
    for (int pass = 0; pass < 4; ++pass) {
      const auto t0 = std::chrono::steady_clock::now();
      float* __restrict pa = a.data();
      const float* __restrict pb = b.data();
      const float* __restrict pc = c.data();
      for (std::size_t i = 0; i < n; ++i) pa[i] = pb[i] + 3.0f * pc[i];
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (pass > 0) best = std::min(best, s);  // the first pass touches the pages
    }
    volatile float sink = a[n / 2];
    (void)sink;
    return 3.0 * static_cast<double>(n) * sizeof(float) / best / 1e9;
  }();
  return peak;
}

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string summary_text(const std::vector<ProfileEvent>& events, std::size_t top) {
  if (events.empty()) return "profile: no events recorded\n";
  double first = events.front().start_us, last = first;
  for (const ProfileEvent& e : events) {
    first = std::min(first, e.start_us);
    last = std::max(last, e.start_us + e.duration_us);
  }
  // Kernels and library steps, grouped by name, place and device.
  struct Row {
    std::string name, where, device;
    std::size_t calls = 0;
    double us = 0;
    std::uint64_t bytes = 0;
  };
  std::map<std::string, Row> rows;
  struct Total {
    std::size_t n = 0;
    double us = 0;
    std::uint64_t bytes = 0;
  };
  std::map<std::string, Total> totals;
  // A kernel compiled at its launch: the compile's time is the compile's,
  // not the kernel's (the trace shows it inside the launch).
  std::vector<double> compiled_inside(events.size(), 0.0);
  std::map<std::uint32_t, std::size_t> launch_of_thread;  // the last kernel or library event per thread
  for (std::size_t i = 0; i < events.size(); ++i) {
    const ProfileEvent& e = events[i];
    if (e.category == "kernel" || e.category == "library") launch_of_thread[e.thread] = i;
    if (e.category != "compile") continue;
    auto it = launch_of_thread.find(e.thread);
    if (it == launch_of_thread.end()) continue;
    const ProfileEvent& k = events[it->second];
    if (e.start_us >= k.start_us && e.start_us + e.duration_us <= k.start_us + k.duration_us + 0.001) {
      compiled_inside[it->second] += e.duration_us;
    }
  }
  for (std::size_t i = 0; i < events.size(); ++i) {
    const ProfileEvent& e = events[i];
    const double us = std::max(0.0, e.duration_us - compiled_inside[i]);
    Total& t = totals[e.category];
    ++t.n;
    t.us += us;
    t.bytes += e.bytes;
    if (e.category != "kernel" && e.category != "library") continue;
    Row& r = rows[e.name + '\0' + e.where + '\0' + e.device];
    r.name = e.name;
    r.where = e.where;
    r.device = e.device;
    ++r.calls;
    r.us += us;
    r.bytes += e.bytes;
  }
  std::vector<Row> sorted;
  for (auto& [k, r] : rows) sorted.push_back(r);
  std::sort(sorted.begin(), sorted.end(), [](const Row& a, const Row& b) { return a.us > b.us; });
  const double work_us = totals["kernel"].us + totals["library"].us;
  const double peak = peak_gb_per_s();
  std::ostringstream os;
  os << "profile: " << fixed((last - first) / 1e3, 3) << " ms recorded, " << events.size() << " events\n";
  os << "  kernels " << totals["kernel"].n << " (" << fixed(totals["kernel"].us / 1e3, 3) << " ms), library steps "
     << totals["library"].n << " (" << fixed(totals["library"].us / 1e3, 3) << " ms), compiles " << totals["compile"].n
     << " (" << fixed(totals["compile"].us / 1e3, 3) << " ms), plans " << totals["plan"].n << " ("
     << fixed(totals["plan"].us / 1e3, 3) << " ms), transfers " << totals["transfer"].n << " ("
     << fixed(totals["transfer"].us / 1e3, 3) << " ms, " << totals["transfer"].bytes << " bytes)\n";
  os << "top " << std::min(top, sorted.size()) << " of " << sorted.size()
     << " kernels and library steps by time (peak: host triad " << fixed(peak, 1) << " GB/s, 1 thread"
     << (std::getenv("AJ_PEAK_GBPS") ? ", AJ_PEAK_GBPS" : "") << "):\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %10s %6s %6s %10s %8s %7s  %s\n", "total ms", "%", "calls", "mean us", "GB/s",
                "% peak", "kernel (where)");
  os << line;
  for (std::size_t i = 0; i < sorted.size() && i < top; ++i) {
    const Row& r = sorted[i];
    const double gbps = r.us > 0 ? static_cast<double>(r.bytes) / (r.us * 1e3) : 0;
    const bool host = r.device == "cpu";
    std::string name = r.name;
    if (name.size() > 60) name = name.substr(0, 57) + "...";
    if (!r.where.empty()) name += " (" + r.where + ")";
    if (!host) name += " [" + r.device + "]";
    std::snprintf(line, sizeof line, "  %10.3f %6.1f %6zu %10.2f %8.2f %7s  %s\n", r.us / 1e3,
                  work_us > 0 ? 100.0 * r.us / work_us : 0.0, r.calls, r.us / static_cast<double>(r.calls), gbps,
                  host && r.bytes ? (fixed(100.0 * gbps / peak, 0) + "%").c_str() : "-", name.c_str());
    os << line;
  }
  return os.str();
}

// The last profile stopped, for profile_summary().
struct Last {
  std::mutex mu;
  std::vector<ProfileEvent> events;
  bool any = false;
};
Last& last() {
  static Last* l = new Last;
  return *l;
}

// Profiles recording now, for profile_summary() while one records.
std::mutex g_live_mu;
std::vector<const profile*> g_live;

}  // namespace

struct profile::State {
  std::string path;
  std::ofstream file;
  std::int64_t start_ns = 0, stop_ns = 0;
  bool recording = true;
  Loc started;
  prof::Snapshot snap;  // after stop
};

profile::profile(const std::string& trace_path, Loc loc) : s_(std::make_unique<State>()) {
  s_->path = trace_path;
  s_->started = loc;
  if (!trace_path.empty()) {
    s_->file.open(trace_path, std::ios::out | std::ios::trunc);
    if (!s_->file) {
      user_error("profile", "cannot write the trace file " + trace_path + ": " + std::strerror(errno), loc);
    }
  }
  s_->start_ns = prof::start();
  std::lock_guard lock(g_live_mu);
  g_live.push_back(this);
}

profile::~profile() {
  if (!s_->recording) return;
  try {
    stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "aj::profile: %s\n", e.what());
  }
}

bool profile::recording() const { return s_->recording; }

void profile::stop(Loc loc) {
  if (!s_->recording) {
    user_error("profile::stop", "this profile (started at " + loc_str(s_->started) + ") stopped already", loc);
  }
  s_->stop_ns = prof::now_ns();
  s_->snap = prof::collect();
  s_->recording = false;
  prof::stop();
  {
    std::lock_guard lock(g_live_mu);
    std::erase(g_live, this);
  }
  std::vector<ProfileEvent> ev = events();
  {
    Last& l = last();
    std::lock_guard lock(l.mu);
    l.events = ev;
    l.any = true;
  }
  if (!s_->path.empty()) {
    s_->file << chrome_json(ev, s_->snap.threads);
    s_->file.close();
    if (!s_->file) runtime_error("aj::profile: writing the trace file " + s_->path + " failed");
  }
}

std::vector<ProfileEvent> profile::events() const {
  const prof::Snapshot now = s_->recording ? prof::collect() : prof::Snapshot{};
  const prof::Snapshot& snap = s_->recording ? now : s_->snap;
  const std::int64_t end = s_->recording ? prof::now_ns() : s_->stop_ns;
  std::vector<const prof::Event*> mine;
  for (const prof::Event& e : snap.events) {
    if (e.start_ns >= s_->start_ns && e.start_ns <= end) mine.push_back(&e);
  }
  std::stable_sort(mine.begin(), mine.end(), [](const prof::Event* a, const prof::Event* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->dur_ns > b->dur_ns;  // parents first
  });
  std::vector<ProfileEvent> out;
  out.reserve(mine.size());
  for (const prof::Event* e : mine) out.push_back(convert(*e, s_->start_ns));
  return out;
}

std::string profile::trace_json() const {
  return chrome_json(events(), s_->recording ? prof::collect().threads : s_->snap.threads);
}

std::string profile::summary(std::size_t top) const { return summary_text(events(), top); }

profile_range::profile_range(const std::string& name) : start_ns_(prof::on() ? prof::now_ns() : 0) {
  std::strncpy(name_, name.c_str(), sizeof name_ - 1);
  name_[sizeof name_ - 1] = '\0';
}

profile_range::~profile_range() {
  if (!start_ns_ || !prof::on()) return;
  prof::Event e;
  e.kind = prof::Kind::range;
  e.start_ns = start_ns_;
  e.dur_ns = prof::now_ns() - start_ns_;
  e.set_name(name_);
  prof::record(e);
}

std::string profile_summary(std::size_t top) {
  Last& l = last();
  std::vector<ProfileEvent> ev;
  {
    std::lock_guard lock(l.mu);
    if (l.any) ev = l.events;
  }
  if (!ev.empty()) return summary_text(ev, top);
  std::lock_guard lock(g_live_mu);  // none stopped yet: the one recording, up to now
  return g_live.empty() ? std::string() : g_live.back()->summary(top);
}

namespace {

// AJ_TRACE=file.json: a profile of the whole process, written at exit.
struct EnvTrace {
  std::unique_ptr<profile> p;
  std::string path;
  EnvTrace() {
    const char* f = std::getenv("AJ_TRACE");
    if (!f || !*f) return;
    path = f;
    try {
      p = std::make_unique<profile>(path);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "aj: AJ_TRACE: %s\n", e.what());
    }
  }
  ~EnvTrace() {
    if (!p || !p->recording()) return;
    try {
      p->stop();
      std::fprintf(stderr, "aj: AJ_TRACE: wrote %s\n", path.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "aj: AJ_TRACE: %s\n", e.what());
    }
  }
};
EnvTrace g_env_trace;

}  // namespace

}  // namespace aj
