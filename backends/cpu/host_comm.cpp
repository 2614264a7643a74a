// Op::Collective over MPI (host_comm.hpp says what holds; docs/distributed.md).
#include "backends/cpu/host_comm.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "arrayjit/half.hpp"
#include "graph/graph.hpp"
#include "graph/strided_walk.hpp"

#ifdef AJ_HAVE_MPI
#include <mpi.h>
#endif

namespace aj::comm {

namespace {

std::atomic<double> g_timeout{-1.0};
std::atomic<int> g_overlap{-1};      // set_overlap's mode (-1: automatic)
std::atomic<int> g_local_ranks{1};   // the world's ranks on this machine (init)

const char* const kLaunchVars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"};

// What one rank was asked to do at a collective step; the ranks compare
// theirs before any data moves.
struct Sig {
  std::int32_t kind = 0, reduce = 0, dtype = 0, ndim = 0;
  std::int64_t peer = 0, numel = 0;
  std::int64_t dims[8] = {};
};

Sig signature(const LibraryCall& c) {
  Sig s;
  s.kind = static_cast<std::int32_t>(c.axis);
  s.reduce = static_cast<std::int32_t>(c.k);
  s.dtype = static_cast<std::int32_t>(c.dtype);
  const auto kind = static_cast<CollectiveKind>(c.axis);
  // What the ranks must agree on: the operand's shape (the result's for recv,
  // which has none); the root of a broadcast (send/recv: each names the other).
  const std::vector<std::int64_t>& d = kind == CollectiveKind::recv ? c.shape : c.inputs.at(0).shape;
  s.ndim = static_cast<std::int32_t>(d.size());
  s.numel = 1;
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (i < 8) s.dims[i] = d[i];
    s.numel *= d[i];
  }
  if (kind == CollectiveKind::broadcast) s.peer = c.ints.at(1);
  if (kind != CollectiveKind::all_reduce && kind != CollectiveKind::reduce_scatter) s.reduce = 0;
  return s;
}

bool same(const Sig& a, const Sig& b, bool point_to_point) {
  if (a.dtype != b.dtype || a.ndim != b.ndim || a.numel != b.numel) return false;
  if (!point_to_point && (a.kind != b.kind || a.reduce != b.reduce || a.peer != b.peer)) return false;
  for (int i = 0; i < std::min(a.ndim, 8); ++i) {
    if (a.dims[i] != b.dims[i]) return false;
  }
  return true;
}

std::string describe(const Sig& s) {
  const auto kind = static_cast<CollectiveKind>(s.kind);
  std::string r = collective_name(kind);
  if (kind == CollectiveKind::all_reduce || kind == CollectiveKind::reduce_scatter) {
    r += std::string("(") + reduce_kind_name(static_cast<ReduceKind>(s.reduce)) + ")";
  }
  r += std::string(" of ") + dtype_name(static_cast<DType>(s.dtype)) + " [";
  for (int i = 0; i < s.ndim; ++i) {
    if (i) r += ", ";
    r += i < 8 ? std::to_string(s.dims[i]) : "...";
  }
  r += "]";
  if (kind == CollectiveKind::broadcast) r += " from root " + std::to_string(s.peer);
  return r;
}

// The operand's elements, row-major, into dst (graph/strided_walk.hpp).
void pack(const LibraryOperand& o, const char* base, char* dst) {
  const Shape shape(o.shape);
  const std::size_t item = itemsize(o.dtype);
  StridedWalk walk(shape, {&o.strides}, {o.offset});
  for (std::int64_t i = 0, n = shape.numel(); i < n; ++i, walk.next(), dst += item) {
    std::memcpy(dst, base + walk.offset(0) * static_cast<std::int64_t>(item), item);
  }
}

std::string where(const LibraryCall& c) { return " (at " + loc_str(c.loc) + ")"; }

}  // namespace

void set_timeout(double seconds) {
  if (!(seconds > 0)) runtime_error("aj::distributed::set_timeout: the timeout must be a positive number of seconds");
  g_timeout.store(seconds);
}

double timeout() {
  const double t = g_timeout.load();
  if (t > 0) return t;
  static const double from_env = [] {  // (read once: every step asks)
    const char* env = std::getenv("AJ_DISTRIBUTED_TIMEOUT");
    const double e = env ? std::atof(env) : 0.0;
    return e > 0 ? e : 300.0;
  }();
  return from_env;
}

void set_overlap(int mode) {
  if (mode < -1 || mode > 1) runtime_error("aj::distributed::set_overlap: the mode must be -1 (automatic), 0 or 1");
  g_overlap.store(mode);
}

bool overlap() {
  int mode = g_overlap.load();
  if (mode < 0) {
    static const int from_env = [] {  // (read once: every step asks)
      const char* env = std::getenv("AJ_DISTRIBUTED_OVERLAP");
      return env && (std::strcmp(env, "0") == 0 || std::strcmp(env, "1") == 0) ? env[0] - '0' : -1;
    }();
    mode = from_env;
  }
  if (mode >= 0) return mode == 1;
  // Automatic: an exchange started early runs on the communication thread,
  // and over shared memory or a busy-polling transport it needs a core of
  // its own; with one core per rank or fewer it only competes with the
  // kernels (measured: bench_distributed's data-parallel step).
  const unsigned cores = std::thread::hardware_concurrency();
  return cores >= 2u * static_cast<unsigned>(std::max(1, g_local_ranks.load()));
}

bool launched() {
  for (const char* v : kLaunchVars) {
    if (std::getenv(v)) return true;
  }
  return false;
}

#ifndef AJ_HAVE_MPI

bool built_with_mpi() { return false; }
void init(bool strict) {
  if (strict) {
    runtime_error("aj::distributed::init: this arrayjit was built without MPI (install Open MPI, Debian: "
                  "libopenmpi-dev, and build it again)");
  }
}
bool running() { return false; }
int rank(std::int64_t) { return 0; }
int size(std::int64_t) { return 1; }
std::int64_t split(std::int64_t, int color, int) { return color < 0 ? -1 : 0; }
void run(const LibraryCall& c, const void*, void*) {
  runtime_error(std::string("aj::") + collective_name(static_cast<CollectiveKind>(c.axis)) +
                ": this arrayjit was built without MPI" + where(c));
}
std::function<void()> start(const LibraryCall& c, const void* input, void* out) {
  run(c, input, out);
  return nullptr;
}

#else

namespace {

constexpr int kTagHeader = 7001, kTagAck = 7002, kTagData = 7003;
// A rank whose program ends (its exit handler) tells every other rank, so
// that one waiting for it in a collective fails at once instead of at the
// timeout (on the library's world communicator; never received otherwise).
constexpr int kTagBye = 7004;

// The communication thread: runs jobs in the order they were handed over.
struct CommThread {
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::function<void()>> jobs;
  std::thread th;
  std::thread::id id;

  void start() {
    th = std::thread([this] {
      for (;;) {
        std::function<void()> job;
        {
          std::unique_lock<std::mutex> lock(m);
          cv.wait(lock, [&] { return !jobs.empty(); });
          job = std::move(jobs.front());
          jobs.pop_front();
        }
        if (!job) return;  // the end
        job();
      }
    });
    id = th.get_id();
  }

  // Runs f on the thread after what was handed over before; returns at once.
  void post(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> lock(m);
      jobs.push_back(std::move(f));
    }
    cv.notify_one();
  }

  // Runs f on the thread and waits for it; what f throws is thrown here.
  void call(const std::function<void()>& f) {
    if (std::this_thread::get_id() == id) return f();
    std::exception_ptr err;
    bool done = false;
    std::mutex dm;
    std::condition_variable dcv;
    {
      std::lock_guard<std::mutex> lock(m);
      jobs.push_back([&] {
        try {
          f();
        } catch (...) {
          err = std::current_exception();
        }
        std::lock_guard<std::mutex> l(dm);
        done = true;
        dcv.notify_one();
      });
    }
    cv.notify_one();
    std::unique_lock<std::mutex> lock(dm);
    dcv.wait(lock, [&] { return done; });
    if (err) std::rethrow_exception(err);
  }

  void finish() {
    {
      std::lock_guard<std::mutex> lock(m);
      jobs.push_back(nullptr);
    }
    cv.notify_one();
    th.join();
  }
};

struct GroupInfo {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
};

struct State {
  std::mutex m;  // guards the fields below against the evaluating threads
  bool running = false, finalized = false;
  bool owns_mpi = false;  // init started MPI (else the program did, and finalizes it)
  bool direct = false;    // MPI_THREAD_MULTIPLE: steps call MPI on their own thread, one at a time
  std::mutex direct_m;    // (that one at a time)
  std::atomic<int> in_flight{0};  // exchanges started (start) and not done
  std::string broken;  // why an earlier step left MPI unusable ("": it did not)
  std::vector<int> departed;  // world ranks whose program ended (their goodbyes received)
  std::vector<GroupInfo> groups;
  CommThread thread;
  // Reductions MPI has no operation for: f16/bf16 (any), and float max/min,
  // whose NaN must win as in aj::maximum (docs/semantics.md).
  MPI_Op half_ops[2][5] = {};
  MPI_Op float_ops[2][2] = {};
};

State& state() {
  static State* s = new State;  // never destroyed: the exit handler uses it
  return *s;
}

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  runtime_error(std::string("aj::distributed: ") + what + " failed: " + std::string(text, static_cast<std::size_t>(len)));
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::bool_: return MPI_C_BOOL;
    case DType::i32: return MPI_INT32_T;
    case DType::i64: return MPI_INT64_T;
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::f16:
    case DType::bf16:
    case DType::u16: return MPI_UINT16_T;
    case DType::u8: return MPI_UINT8_T;
    case DType::i8: return MPI_INT8_T;
    case DType::i16: return MPI_INT16_T;
    case DType::u32: return MPI_UINT32_T;
    case DType::u64: return MPI_UINT64_T;
  }
  return MPI_BYTE;
}

template <class H, int R>
void half_op(void* in, void* inout, int* len, MPI_Datatype*) {
  const H* a = static_cast<const H*>(in);
  H* b = static_cast<H*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = static_cast<float>(a[i]), y = static_cast<float>(b[i]);
    float r;
    if (R == 0 || R == 1) r = x + y;  // sum, mean
    else if (R == 2) r = (x != x || y != y) ? x + y : std::max(x, y);
    else if (R == 3) r = (x != x || y != y) ? x + y : std::min(x, y);
    else r = x * y;
    b[i] = H(r);
  }
}

template <class F, bool Max>
void float_op(void* in, void* inout, int* len, MPI_Datatype*) {
  const F* a = static_cast<const F*>(in);
  F* b = static_cast<F*>(inout);
  for (int i = 0; i < *len; ++i) {
    const F x = a[i], y = b[i];
    b[i] = (x != x || y != y) ? x + y : Max ? (x > y ? x : y) : (x < y ? x : y);
  }
}

MPI_Op mpi_op(DType t, ReduceKind r) {
  State& s = state();
  const int ri = static_cast<int>(r);
  if (t == DType::f16 || t == DType::bf16) return s.half_ops[t == DType::bf16][ri];
  if ((t == DType::f32 || t == DType::f64) && (r == ReduceKind::max || r == ReduceKind::min)) {
    return s.float_ops[t == DType::f64][r == ReduceKind::min];
  }
  if (t == DType::bool_) return r == ReduceKind::sum || r == ReduceKind::max ? MPI_LOR : MPI_LAND;
  switch (r) {
    case ReduceKind::sum:
    case ReduceKind::mean: return MPI_SUM;  // (a mean node exchanges the sum; a multiply after it scales)
    case ReduceKind::max: return MPI_MAX;
    case ReduceKind::min: return MPI_MIN;
    case ReduceKind::prod: return MPI_PROD;
  }
  return MPI_SUM;
}

const GroupInfo& group_info(std::int64_t group, const char* what) {
  State& s = state();
  if (group < 0 || group >= static_cast<std::int64_t>(s.groups.size())) {
    runtime_error(std::string("aj::") + what + ": no group " + std::to_string(group) + " in this process");
  }
  return s.groups[static_cast<std::size_t>(group)];
}

// Throws when a rank that step c waits for has ended its program (its
// goodbye, sent at exit, received now or before), leaving MPI unusable.
void check_departed(const LibraryCall& c, const char* doing) {
  State& s = state();
  MPI_Comm world = s.groups.at(0).comm;
  for (;;) {
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kTagBye, world, &flag, &st) != MPI_SUCCESS || !flag) break;
    int ignored = 0;
    MPI_Recv(&ignored, 1, MPI_INT, st.MPI_SOURCE, kTagBye, world, MPI_STATUS_IGNORE);
    s.departed.push_back(st.MPI_SOURCE);
  }
  if (s.departed.empty()) return;
  const auto kind = static_cast<CollectiveKind>(c.axis);
  const GroupInfo& g = group_info(c.ints.at(0), collective_name(kind));
  MPI_Group world_group, group;
  MPI_Comm_group(world, &world_group);
  MPI_Comm_group(g.comm, &group);
  for (int w : s.departed) {
    int r = MPI_UNDEFINED;  // w's rank in the step's group
    MPI_Group_translate_ranks(world_group, 1, &w, group, &r);
    const bool waited_for = r != MPI_UNDEFINED && (kind == CollectiveKind::send || kind == CollectiveKind::recv
                                                       ? r == static_cast<int>(c.ints.at(1))
                                                       : r != g.rank);
    if (!waited_for) continue;
    MPI_Group_free(&world_group);
    MPI_Group_free(&group);
    std::string msg = std::string("aj::") + collective_name(kind) + ": rank " + std::to_string(r) +
                      " ended its program while rank " + std::to_string(g.rank) + " waited " + doing +
                      " (every rank must evaluate the same collectives: a value evaluated on some ranks only, "
                      "such as one printed by rank 0, leaves the others waiting)" + where(c);
    s.broken = msg;
    runtime_error(msg);
  }
  MPI_Group_free(&world_group);
  MPI_Group_free(&group);
}

// Waits for requests, polling (MPI progresses inside the calls); throws when
// the timeout passes or a rank it waits for ended its program, leaving MPI
// unusable (the requests stay posted).
void wait_all(MPI_Request* reqs, int n, const LibraryCall& c, const char* doing) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const double limit = timeout();
  for (long spins = 0;; ++spins) {
    int flag = 0;
    check(MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE), "MPI_Testall");
    if (flag) return;
    // Spin a little (the others are likely a few microseconds away: a step
    // of the same program; a yield is a system call), then yield, then
    // sleep in growing steps: waiting ranks on a machine with fewer cores
    // than processes must not take the cores the others need.
    if (spins < 256) continue;
    if ((spins & 15) == 0) check_departed(c, doing);
    if (spins < 20000) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(spins < 40000 ? 20 : 200));
    if ((spins & 63) == 0 && std::chrono::duration<double>(clock::now() - start).count() > limit) {
      const auto kind = static_cast<CollectiveKind>(c.axis);
      std::string msg = std::string("aj::") + collective_name(kind) + ": rank " +
                        std::to_string(group_info(c.ints.at(0), "collective").rank) + " waited " +
                        std::to_string(static_cast<long>(limit)) + " s " + doing +
                        " (a rank exited or failed, or runs other collectives; aj::distributed::set_timeout "
                        "or AJ_DISTRIBUTED_TIMEOUT sets the wait)" + where(c);
      state().broken = msg;
      runtime_error(msg);
    }
  }
}

// FNV-1a of a signature's bytes (a Sig has no padding; what signature()
// leaves unset is zero).
std::uint64_t digest(const Sig& s) {
  static_assert(sizeof(Sig) == 96, "Sig has no padding");
  const auto* b = reinterpret_cast<const unsigned char*>(&s);
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < sizeof(Sig); ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// The ranks agree on the step, or each throws the same located user error.
// One small all-reduce checks it (the max of each rank's digest and of its
// complement: equal digests everywhere iff max == ~max(~digest)); only when
// they differ do the ranks all-gather their signatures, for the message.
void agree(const LibraryCall& c, const GroupInfo& g) {
  const Sig mine = signature(c);
  const std::uint64_t h = digest(mine);
  std::uint64_t sent[2] = {h, ~h}, got[2] = {0, 0};
  MPI_Request req = MPI_REQUEST_NULL;
  check(MPI_Iallreduce(sent, got, 2, MPI_UINT64_T, MPI_MAX, g.comm, &req), "MPI_Iallreduce");
  wait_all(&req, 1, c, "for the other ranks to reach this collective");
  if (got[0] == ~got[1]) return;
  std::vector<Sig> all(static_cast<std::size_t>(g.size));
  check(MPI_Iallgather(&mine, sizeof(Sig), MPI_BYTE, all.data(), sizeof(Sig), MPI_BYTE, g.comm, &req),
        "MPI_Iallgather");
  wait_all(&req, 1, c, "for the other ranks to say what they run");
  std::string msg = "the ranks disagree:";
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all.size() > 8 && r > 0 && same(all[r], all[0], false)) continue;
    msg += " rank " + std::to_string(r) + " runs " + describe(all[r]) + (r + 1 < all.size() ? ";" : "");
  }
  user_error(collective_name(static_cast<CollectiveKind>(c.axis)), msg, c.loc);
}

void run_on_thread(const LibraryCall& c, const char* in, char* out) {
  State& s = state();
  const auto kind = static_cast<CollectiveKind>(c.axis);
  const char* name = collective_name(kind);
  if (!s.broken.empty()) {
    runtime_error(std::string("aj::") + name + ": an earlier collective failed, MPI cannot go on: " + s.broken);
  }
  const GroupInfo& g = group_info(c.ints.at(0), name);
  const DType t = c.dtype;
  const std::size_t item = itemsize(t);
  std::int64_t n_out = 1;
  for (std::int64_t e : c.shape) n_out *= e;
  const std::int64_t n_in = kind == CollectiveKind::recv ? 0 : [&] {
    std::int64_t n = 1;
    for (std::int64_t e : c.inputs[0].shape) n *= e;
    return n;
  }();
  if (std::max(n_in, n_out) > 0x7fffffff) {
    user_error(name, "more than 2^31 - 1 elements in one collective: split the array", c.loc);
  }
  const MPI_Datatype type = mpi_type(t);
  const int peer = static_cast<int>(c.ints.at(1));
  // Once the ranks have agreed, every one of them is in this collective: the
  // data moves by MPI's blocking call, its tuned algorithms progressing
  // without us (a non-blocking collective advances only inside the polls).
  switch (kind) {
    case CollectiveKind::all_reduce:
      agree(c, g);
      check(MPI_Allreduce(in == out ? MPI_IN_PLACE : in, out, static_cast<int>(n_in), type,
                          mpi_op(t, static_cast<ReduceKind>(c.k)), g.comm), "MPI_Allreduce");
      break;
    case CollectiveKind::all_gather:
      agree(c, g);
      check(MPI_Allgather(in, static_cast<int>(n_in), type, out, static_cast<int>(n_in), type, g.comm),
            "MPI_Allgather");
      break;
    case CollectiveKind::reduce_scatter:
      agree(c, g);
      check(MPI_Reduce_scatter_block(in, out, static_cast<int>(n_out), type, mpi_op(t, static_cast<ReduceKind>(c.k)),
                                     g.comm), "MPI_Reduce_scatter_block");
      break;
    case CollectiveKind::broadcast:
      agree(c, g);
      if (g.rank == peer && out != in) std::memcpy(out, in, static_cast<std::size_t>(n_out) * item);
      check(MPI_Bcast(out, static_cast<int>(n_out), type, peer, g.comm), "MPI_Bcast");
      break;
    case CollectiveKind::send:
    case CollectiveKind::recv: {
      // The sender says what it sends, the receiver what it expects; both
      // compare, so both fail alike; then the data.
      const bool sending = kind == CollectiveKind::send;
      Sig mine = signature(c), theirs;
      MPI_Request r2[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
      if (sending) {
        check(MPI_Isend(&mine, sizeof(Sig), MPI_BYTE, peer, kTagHeader, g.comm, &r2[0]), "MPI_Isend");
        check(MPI_Irecv(&theirs, sizeof(Sig), MPI_BYTE, peer, kTagAck, g.comm, &r2[1]), "MPI_Irecv");
      } else {
        check(MPI_Irecv(&theirs, sizeof(Sig), MPI_BYTE, peer, kTagHeader, g.comm, &r2[0]), "MPI_Irecv");
        check(MPI_Isend(&mine, sizeof(Sig), MPI_BYTE, peer, kTagAck, g.comm, &r2[1]), "MPI_Isend");
      }
      wait_all(r2, 2, c, sending ? "for the receiving rank" : "for the sending rank");
      if (!same(mine, theirs, true)) {
        const Sig& sent = sending ? mine : theirs;
        const Sig& expected = sending ? theirs : mine;
        auto what = [](const Sig& s) {
          std::string d = std::string(dtype_name(static_cast<DType>(s.dtype))) + " [";
          for (int i = 0; i < s.ndim; ++i) d += (i ? ", " : "") + (i < 8 ? std::to_string(s.dims[i]) : "...");
          return d + "]";
        };
        user_error(name, "the sending rank sends " + what(sent) + ", the receiving rank expects " + what(expected) +
                             " (rank " + std::to_string(sending ? g.rank : peer) + " to rank " +
                             std::to_string(sending ? peer : g.rank) + ")", c.loc);
      }
      // Both ranks are here (each saw the other's signature): the data.
      if (sending) {
        if (out != in) std::memcpy(out, in, static_cast<std::size_t>(n_out) * item);
        check(MPI_Send(out, static_cast<int>(n_out), type, peer, kTagData, g.comm), "MPI_Send");
      } else {
        check(MPI_Recv(out, static_cast<int>(n_out), type, peer, kTagData, g.comm, MPI_STATUS_IGNORE), "MPI_Recv");
      }
      break;
    }
  }
}

// Runs f where MPI calls may be made: on the evaluating thread itself (one
// step at a time) when MPI is thread-multiple, else on the communication
// thread.
// A step started before (start) and not done yet keeps its place: then
// this one goes through the communication thread's queue after it.
void on_comm(const std::function<void()>& f) {
  State& s = state();
  if (s.direct && s.in_flight.load() == 0) {
    std::lock_guard<std::mutex> lock(s.direct_m);
    return f();
  }
  s.thread.call([&] {
    std::unique_lock<std::mutex> lock(s.direct_m, std::defer_lock);
    if (s.direct) lock.lock();
    f();
  });
}

// Tells every other rank that this one's program ended (kTagBye), giving
// the small messages up to a second to leave.
void say_goodbye(State& s) {
  const GroupInfo& w = s.groups[0];
  std::vector<MPI_Request> reqs;
  static const int bye = 1;
  for (int r = 0; r < w.size; ++r) {
    if (r == w.rank) continue;
    MPI_Request q = MPI_REQUEST_NULL;
    if (MPI_Isend(&bye, 1, MPI_INT, r, kTagBye, w.comm, &q) == MPI_SUCCESS) reqs.push_back(q);
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (;;) {
    int done = 0;
    if (MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS || done) break;
    if (std::chrono::steady_clock::now() > until) {
      for (MPI_Request& q : reqs) {
        if (q != MPI_REQUEST_NULL) MPI_Request_free(&q);
      }
      break;
    }
    std::this_thread::yield();
  }
}

void finalize_at_exit() {
  State& s = state();
  bool run = false;
  {
    std::lock_guard<std::mutex> lock(s.m);
    run = s.running && !s.finalized;
    s.finalized = true;
  }
  if (!run) return;
  // A broken MPI (a timed-out step) cannot finalize: the other ranks are gone
  // or elsewhere, and MPI_Finalize would wait for them.
  s.thread.call([&] {
    std::lock_guard<std::mutex> lock(s.direct_m);  // (no step of another thread in flight)
    int gone = 0;
    MPI_Finalized(&gone);  // the program that started MPI may have finalized it already
    if (!gone && !s.groups.empty()) say_goodbye(s);
    if (s.broken.empty() && !gone) {
      for (GroupInfo& g : s.groups) {
        if (g.comm != MPI_COMM_NULL) MPI_Comm_free(&g.comm);
      }
      if (s.owns_mpi) MPI_Finalize();  // else the program finalizes the MPI it started
    }
  });
  s.thread.finish();
}

}  // namespace

bool built_with_mpi() { return true; }

void init(bool strict) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.m);
  if (s.running) return;
  if (s.finalized) runtime_error("aj::distributed::init: MPI was finalized (the process is exiting)");
  if (!launched()) {
    if (strict) {
      runtime_error("aj::distributed::init: this process was not started by an MPI launcher (run it with mpirun "
                    "-np N, or srun); without one it is a group of one process");
    }
    return;
  }
  s.thread.start();
  try {
    s.thread.call([&] {
      int already = 0;
      MPI_Initialized(&already);
      int provided = 0;
      if (!already) {
        // MPI_THREAD_MULTIPLE where the build has it: an evaluating thread then
        // makes its step's calls itself (one at a time), without the round
        // trip to this thread; else (FUNNELED) every call is made here.
        check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
        s.owns_mpi = true;
      } else {
        // The program started MPI itself: this thread is not the one that
        // did, so MPI must take calls from any thread.
        MPI_Query_thread(&provided);
        if (provided < MPI_THREAD_MULTIPLE) {
          runtime_error("aj::distributed::init: the program initialized MPI at thread level " +
                        std::to_string(provided) + "; arrayjit's collectives run on a thread of their own and need "
                        "MPI_THREAD_MULTIPLE (MPI_Init_thread), or let aj::distributed::init start MPI");
        }
      }
      s.direct = provided >= MPI_THREAD_MULTIPLE;
      // A world of the library's own: the program's own calls on
      // MPI_COMM_WORLD never match the library's.
      MPI_Comm world = MPI_COMM_NULL;
      check(MPI_Comm_dup(MPI_COMM_WORLD, &world), "MPI_Comm_dup");
      MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
      GroupInfo w;
      w.comm = world;
      MPI_Comm_rank(w.comm, &w.rank);
      MPI_Comm_size(w.comm, &w.size);
      s.groups.push_back(w);
      MPI_Comm node = MPI_COMM_NULL;  // the ranks on this machine (for overlap())
      if (MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, w.rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        int local = 1;
        MPI_Comm_size(node, &local);
        g_local_ranks.store(local);
        MPI_Comm_free(&node);
      }
      MPI_Op_create(&half_op<f16, 0>, 1, &s.half_ops[0][0]);
      MPI_Op_create(&half_op<f16, 1>, 1, &s.half_ops[0][1]);
      MPI_Op_create(&half_op<f16, 2>, 1, &s.half_ops[0][2]);
      MPI_Op_create(&half_op<f16, 3>, 1, &s.half_ops[0][3]);
      MPI_Op_create(&half_op<f16, 4>, 1, &s.half_ops[0][4]);
      MPI_Op_create(&half_op<bf16, 0>, 1, &s.half_ops[1][0]);
      MPI_Op_create(&half_op<bf16, 1>, 1, &s.half_ops[1][1]);
      MPI_Op_create(&half_op<bf16, 2>, 1, &s.half_ops[1][2]);
      MPI_Op_create(&half_op<bf16, 3>, 1, &s.half_ops[1][3]);
      MPI_Op_create(&half_op<bf16, 4>, 1, &s.half_ops[1][4]);
      MPI_Op_create(&float_op<float, true>, 1, &s.float_ops[0][0]);
      MPI_Op_create(&float_op<float, false>, 1, &s.float_ops[0][1]);
      MPI_Op_create(&float_op<double, true>, 1, &s.float_ops[1][0]);
      MPI_Op_create(&float_op<double, false>, 1, &s.float_ops[1][1]);
    });
  } catch (...) {
    s.thread.finish();
    throw;
  }
  s.running = true;
  std::atexit(finalize_at_exit);
}

bool running() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.m);
  return s.running && !s.finalized;
}

int rank(std::int64_t group) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.m);
  if (!s.running) return 0;
  return group_info(group, "distributed::rank").rank;
}

int size(std::int64_t group) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.m);
  if (!s.running) return 1;
  return group_info(group, "distributed::size").size;
}

std::int64_t split(std::int64_t group, int color, int key) {
  State& s = state();
  if (!running()) return color < 0 ? -1 : 0;
  std::int64_t id = -1;
  on_comm([&] {
    GroupInfo parent;
    {
      std::lock_guard<std::mutex> lock(s.m);
      parent = group_info(group, "distributed::split");
    }
    MPI_Comm c = MPI_COMM_NULL;
    check(MPI_Comm_split(parent.comm, color < 0 ? MPI_UNDEFINED : color, key, &c), "MPI_Comm_split");
    if (c == MPI_COMM_NULL) return;
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    GroupInfo gi;
    gi.comm = c;
    MPI_Comm_rank(c, &gi.rank);
    MPI_Comm_size(c, &gi.size);
    std::lock_guard<std::mutex> lock(s.m);
    id = static_cast<std::int64_t>(s.groups.size());
    s.groups.push_back(gi);
  });
  return id;
}

namespace {

// The operand as the exchange reads it: contiguous (a view's elements packed
// into `packed` first); null for recv.
const char* operand(const LibraryCall& c, const void* input, std::vector<char>& packed) {
  if (!running()) {
    runtime_error(std::string("aj::") + collective_name(static_cast<CollectiveKind>(c.axis)) +
                  ": MPI is not running (call aj::distributed::init() first)" + where(c));
  }
  if (static_cast<CollectiveKind>(c.axis) == CollectiveKind::recv) return nullptr;
  const LibraryOperand& o = c.inputs.at(0);
  const Shape shape(o.shape);
  if (o.offset == 0 && is_contiguous(shape, o.strides)) return static_cast<const char*>(input);
  packed.resize(static_cast<std::size_t>(shape.numel()) * itemsize(o.dtype));
  pack(o, static_cast<const char*>(input), packed.data());
  return packed.data();
}

// A started exchange, as its waiter sees it.
struct Pending {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
};

}  // namespace

void run(const LibraryCall& c, const void* input, void* out) {
  std::vector<char> packed;
  const char* in = operand(c, input, packed);
  on_comm([&] { run_on_thread(c, in, static_cast<char*>(out)); });
}

std::function<void()> start(const LibraryCall& c, const void* input, void* out) {
  if (!overlap()) {
    run(c, input, out);
    return nullptr;
  }
  auto call = std::make_shared<const LibraryCall>(c);
  auto packed = std::make_shared<std::vector<char>>();
  const char* in = operand(*call, input, *packed);
  auto p = std::make_shared<Pending>();
  State& s = state();
  s.in_flight.fetch_add(1);
  s.thread.post([&s, call, packed, in, out, p] {
    try {
      std::unique_lock<std::mutex> lock(s.direct_m, std::defer_lock);
      if (s.direct) lock.lock();  // after any step another thread makes directly
      run_on_thread(*call, in, static_cast<char*>(out));
    } catch (...) {
      p->error = std::current_exception();
    }
    s.in_flight.fetch_sub(1);
    std::lock_guard<std::mutex> lock(p->m);
    p->done = true;
    p->cv.notify_all();
  });
  return [p] {
    std::unique_lock<std::mutex> lock(p->m);
    p->cv.wait(lock, [&] { return p->done; });
    if (p->error) std::rethrow_exception(p->error);
  };
}

#endif

}  // namespace aj::comm
