// The C API's handle table (see core/c/handles.hpp for its invariants).
#include "core/c/handles.hpp"

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace aj::c_api {

Operand ArrayRef::operand() const {
  if (!weak) return Operand(array);
  Operand o(0);
  o.scalar = scalar;
  return o;
}

namespace {

enum class Kind : std::uint8_t { free, array, function };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::free: return "free";
    case Kind::array: return "aj_array";
    case Kind::function: return "aj_function";
  }
  return "?";
}

constexpr std::uint32_t kNone = 0xffffffffu;

struct Slot {
  std::uint32_t generation = 1;  // of the live handle, or of the next one
  Kind kind = Kind::free;
  std::uint32_t next_free = kNone;  // the free list runs through the slots
  ArrayRef array;
  std::shared_ptr<Function> function;
};

// Free slots are a queue linked through the slots themselves, so giving one
// back never allocates (and never throws).
struct Table {
  std::mutex mutex;
  std::deque<Slot> slots;  // a deque: slots never move
  std::uint32_t free_head = kNone, free_tail = kNone;
  std::size_t live = 0;
};

Table& table() {
  static Table* t = new Table;  // never destroyed: handles may be released during static destruction
  return *t;
}

thread_local std::vector<aj_array>* t_recorder = nullptr;
// Reservations of this thread not filled yet: the recorder keeps room for
// each, so that filling one never allocates.
thread_local std::size_t t_unfilled = 0;

std::uint64_t make_id(std::uint32_t slot, std::uint32_t generation) {
  return (std::uint64_t{generation} << 32) | slot;
}

std::string hex(std::uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), digits[v & 15]);
    v >>= 4;
  } while (v);
  return "0x" + s;
}

// Under the lock: the slot `id` names if it is live and of kind `want`.
Slot& live_slot(Table& t, std::uint64_t id, Kind want, const char* what) {
  const char* type = kind_name(want);
  if (id == 0) throw HandleError(std::string(what) + " is the null " + type + " handle");
  const auto index = static_cast<std::uint32_t>(id & 0xffffffffu);
  const auto generation = static_cast<std::uint32_t>(id >> 32);
  if (index >= t.slots.size() || generation == 0) {
    throw HandleError(std::string(what) + " (" + hex(id) + ") is not an arrayjit handle");
  }
  Slot& s = t.slots[index];
  if (s.generation != generation) {
    if (generation < s.generation) {
      throw HandleError(std::string(what) + " (" + hex(id) + ") is a released " + type +
                        " handle (released before, or a copy of one that was)");
    }
    throw HandleError(std::string(what) + " (" + hex(id) + ") is not an arrayjit handle");
  }
  if (s.kind == Kind::free) {  // its current generation was never handed out
    throw HandleError(std::string(what) + " (" + hex(id) + ") is not an arrayjit handle");
  }
  if (s.kind != want) {
    throw HandleError(std::string(what) + " (" + hex(id) + ") is an " + kind_name(s.kind) + " handle, not an " +
                      type);
  }
  return s;
}

// Under the lock: the oldest free slot, or a new one (which may throw).
std::uint32_t take_slot(Table& t) {
  if (t.free_head != kNone) {
    const std::uint32_t i = t.free_head;
    t.free_head = t.slots[i].next_free;
    if (t.free_head == kNone) t.free_tail = kNone;
    return i;
  }
  if (t.slots.size() >= kNone) runtime_error("aj: the C API's handle table is full (2^32 - 1 handles)");
  t.slots.emplace_back();
  return static_cast<std::uint32_t>(t.slots.size() - 1);
}

// Under the lock: slot i to the back of the queue (released: its generation
// bumped) or to the front (a reservation given back: its generation was never
// handed out, so reusing it at once aliases nothing).
void put_back(Table& t, std::uint32_t i) {
  t.slots[i].next_free = kNone;
  if (t.free_tail == kNone) {
    t.free_head = t.free_tail = i;
  } else {
    t.slots[t.free_tail].next_free = i;
    t.free_tail = i;
  }
}
void put_front(Table& t, std::uint32_t i) {
  t.slots[i].next_free = t.free_head;
  t.free_head = i;
  if (t.free_tail == kNone) t.free_tail = i;
}

// Under the lock: the handle in `s` (index i) is released.
void mark_free(Table& t, Slot& s, std::uint32_t i) {
  s.kind = Kind::free;
  if (++s.generation == 0) s.generation = 1;
  put_back(t, i);
  --t.live;
}

}  // namespace

Reservation::Reservation() {
  Table& t = table();
  if (t_recorder) t_recorder->reserve(t_recorder->size() + t_unfilled + 1);  // fill() must not throw
  {
    std::lock_guard lock(t.mutex);
    index_ = take_slot(t);
  }
  ++t_unfilled;
}

Reservation::~Reservation() {
  if (filled_) return;
  --t_unfilled;
  Table& t = table();
  std::lock_guard lock(t.mutex);
  put_front(t, index_);
}

aj_array Reservation::fill(ArrayRef a) noexcept {
  Table& t = table();
  aj_array h;
  {
    std::lock_guard lock(t.mutex);
    Slot& s = t.slots[index_];
    s.kind = Kind::array;
    s.array = std::move(a);
    ++t.live;
    h._id = make_id(index_, s.generation);
  }
  filled_ = true;
  --t_unfilled;
  if (t_recorder) t_recorder->push_back(h);  // capacity reserved in the constructor
  return h;
}

ArrayRef get_array(aj_array h, const char* what) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  return live_slot(t, h._id, Kind::array, what).array;
}

bool is_live(aj_array h) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  const auto index = static_cast<std::uint32_t>(h._id & 0xffffffffu);
  if (h._id == 0 || index >= t.slots.size()) return false;
  const Slot& s = t.slots[index];
  return s.generation == static_cast<std::uint32_t>(h._id >> 32) && s.kind == Kind::array;
}

void release_array(aj_array h) {
  Table& t = table();
  ArrayRef dropped;  // destroyed after the lock: its buffer may run a release callback
  {
    std::lock_guard lock(t.mutex);
    Slot& s = live_slot(t, h._id, Kind::array, "the handle to release");
    dropped = std::move(s.array);
    s.array = ArrayRef{};
    mark_free(t, s, static_cast<std::uint32_t>(h._id & 0xffffffffu));
  }
}

aj_function new_function(std::shared_ptr<Function> f) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  const std::uint32_t i = take_slot(t);
  Slot& s = t.slots[i];
  s.kind = Kind::function;
  s.function = std::move(f);
  ++t.live;
  return aj_function{make_id(i, s.generation)};
}

std::shared_ptr<Function> get_function(aj_function h, const char* what) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  return live_slot(t, h._id, Kind::function, what).function;
}

void release_function(aj_function h) {
  Table& t = table();
  std::shared_ptr<Function> dropped;  // its release callback runs after the lock
  {
    std::lock_guard lock(t.mutex);
    Slot& s = live_slot(t, h._id, Kind::function, "the function to release");
    dropped = std::move(s.function);
    mark_free(t, s, static_cast<std::uint32_t>(h._id & 0xffffffffu));
  }
}

std::size_t live_handles() {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  return t.live;
}

std::vector<aj_array>* record_new_arrays(std::vector<aj_array>* recorder) {
  std::vector<aj_array>* previous = t_recorder;
  t_recorder = recorder;
  return previous;
}

}  // namespace aj::c_api
