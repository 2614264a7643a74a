// Which device an array lives on, and the trace-time check that one op's
// operands share a device. Costs nothing until a GPU buffer exists.
#pragma once

#include <optional>

#include "graph/graph.hpp"

namespace aj::detail {

// The device of the data node `id` reads: an evaluated node's storage device,
// else that of the first evaluated node below it; nullopt when it reads no
// data (fills, arange, random: "device-neutral", computed where evaluated).
std::optional<Device> device_of(NodeId id);

// Throws a located user error when the inputs of `n` live on two devices;
// otherwise sets n's device_of memo (n is about to be added to the graph).
void check_devices(Node& n, const Loc& loc);

}  // namespace aj::detail
