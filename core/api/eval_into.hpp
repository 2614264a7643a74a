// Array::eval_into's hand-off to the executor: the caller memory that one
// node's kernel should write, instead of a buffer from the allocator.
#pragma once

#include <cstddef>
#include <memory>

#include "graph/graph.hpp"

namespace aj::detail {

// The caller's buffer for kernel output `id` of `bytes` bytes (a borrowed
// host Storage: never written again, never reused in place), once; null when
// eval_into named no buffer for this node. Called by the host executor.
std::shared_ptr<Storage> take_destination(NodeId id, std::size_t bytes);

}  // namespace aj::detail
