// assign_buffers: liveness over the schedule, in-place donation and slot
// packing.
//
// Guarantees:
//  - Every buffer a step creates is a "value" with a live interval
//    [def, last] in step indices; a value the user can still reach after the
//    evaluation (a root, a node with handles, a node something outside this
//    evaluation reads, or the source of such a view) lives to the end.
//  - Donation: a kernel output takes an input's buffer when the input (an
//    already evaluated array or an earlier step's value) has no user handle,
//    every node that reads it is released by this kernel (so nothing can read
//    it later), the kernel reads it only at exactly the index and layout the
//    output writes (same strides, offset, element size), and the bytes agree.
//    The run-time check (Donation::applies) adds: the storage is not borrowed
//    and no other node or view shares it (use_count == 1). A library step
//    flagged Overwrites (scatter, scatter_add: its result is its first input
//    changed in places) takes that input's buffer under the same rules when
//    the input is contiguous at offset 0, and updates it in place.
//  - Values not donated get slots: best fit (smallest free slot that is large
//    enough) among slots whose occupant's interval ended before the def.
//    Values sharing a slot never have overlapping intervals. bytes_used is the
//    sum of slot sizes; lower_bound the largest total of simultaneously live
//    values. At run time the caching host allocator realizes the same reuse:
//    a value's buffer returns to the pool when its last reader finishes.
#pragma once

#include <string>
#include <vector>

#include "opt/passes/fuse.hpp"

namespace aj {

struct BufferValue {
  NodeId node = kNoNode;
  std::size_t bytes = 0;
  int def = 0;
  int last = 0;             // kEnd: survives the evaluation
  int slot = -1;            // -1: donated from an input that is not a value here
  NodeId donor = kNoNode;   // in place: the input whose buffer it takes
};

struct Donation {
  int step = 0;
  int output = 0;       // kernel output index
  NodeId from = kNoNode;
  NodeId to = kNoNode;
};

struct BufferPlan {
  static constexpr int kEnd = 1 << 30;
  std::vector<BufferValue> values;
  std::vector<std::size_t> slot_bytes;
  std::vector<Donation> donations;
  std::size_t bytes_used = 0;
  std::size_t lower_bound = 0;
};

BufferPlan assign_buffers(const Schedule& s);

// Why a kernel output did not take an input's buffer (aj::explain): one entry
// per input array it reads, for every output that was not donated.
struct NotInPlace {
  enum class Why : std::uint8_t {
    taken,           // the buffer went to another output of this kernel (`other`)
    other_index,     // read at another index or layout than the output writes
    item_size,       // its elements are another size than the output's
    sizes_differ,    // its buffer holds another number of bytes
    borrowed,        // caller memory (aj::borrow): never written
    view,            // a view's storage (shared with the array it views)
    shared,          // its storage is shared with another array (`other`: a view of it)
    held,            // a user handle holds it
    read_outside,    // a node outside this evaluation reads it
    root,            // a root of this evaluation: its value survives
    later_reader,    // `other` reads it at step `step`, after this kernel
  };
  int step = 0;
  int output = 0;
  NodeId input = kNoNode;
  Why why = Why::other_index;
  NodeId other = kNoNode;
  int reader_step = -1;
};
std::vector<NotInPlace> not_in_place(const Schedule& s, const BufferPlan& b);

// The run-time half of the donation rule: the storage is on the device the
// step runs on, not shared (no other node or view holds it), not borrowed.
bool donation_applies(NodeId from, std::size_t bytes, Device device);

}  // namespace aj
