// Communication between processes: Op::Collective's steps over MPI (Open
// MPI on Debian; docs/distributed.md).
//
// A thread of the library, the communication thread, initializes MPI (asking
// for MPI_THREAD_MULTIPLE) and finalizes it when the process exits. With
// MPI_THREAD_MULTIPLE an evaluating thread makes its step's MPI calls itself,
// one step at a time; with less, it hands the step to the communication
// thread and waits (FUNNELED is all the library needs).
//
// A step first has the ranks agree on what it is: they all-reduce a digest
// of what each was asked to do (kind, reduction, dtype, shape, root; the
// whole of it all-gathered only when they differ), non-blocking and
// polled, so a rank that waits longer than the timeout throws an aj::Error
// (a rank that exited, or that runs other collectives), and when they differ
// every rank throws the same located error, listing each rank's view. Then
// all of them are in this collective, and the data moves by MPI's blocking
// call (its tuned algorithms; a non-blocking collective would progress only
// inside the polls). A send and its recv agree by a header and an
// acknowledgement.
//
// Groups are numbered: 0 is every process (MPI_COMM_WORLD), split() adds
// more. A process that was not started by an MPI launcher (mpirun, srun) is
// a group of one and never starts MPI: its collectives are identities that
// the tracing API resolves without a step.
#pragma once

#include <cstdint>
#include <functional>

#include "graph/library.hpp"

namespace aj::comm {

// Was the library built with MPI (CMake found it)?
bool built_with_mpi();
// Was this process started by an MPI launcher (its environment says so)?
bool launched();
// Starts MPI on the communication thread (once; later calls return at once).
// Without an MPI build, or outside a launcher, it does nothing unless
// `strict`, which then throws a runtime Error saying why.
void init(bool strict);
// Is MPI running (init started it)?
bool running();

// The calling process's rank in `group`, and the group's size (1 and 0 for
// group 0 when MPI is not running).
int rank(std::int64_t group);
int size(std::int64_t group);
// A new group: the ranks of `group` with the same color, ordered by key
// (ties by rank in `group`); collective over `group`. A negative color: the
// caller is in no new group (-1 returned).
std::int64_t split(std::int64_t group, int color, int key);

// Seconds a step waits for the other ranks before it throws (default 300,
// or the environment's AJ_DISTRIBUTED_TIMEOUT).
void set_timeout(double seconds);
double timeout();
// Do started exchanges (start) run on the communication thread while the
// caller goes on (else start runs them at once)? mode 1: yes, 0: no, -1
// (default): the environment's AJ_DISTRIBUTED_OVERLAP (0 or 1) if set, else
// yes when this machine has at least two hardware threads per rank on it.
void set_overlap(int mode);
bool overlap();

// Runs collective step `call` (graph/library.hpp): `input` the operand as
// laid out (call.inputs[0]; null for recv), `out` the node's contiguous
// buffer. Throws a runtime Error naming the collective and its line
// (call.loc) when the ranks disagree or the wait times out; the step's buffer
// is then not a value.
void run(const LibraryCall& call, const void* input, void* out);
// Starts it instead and returns what waits for it (and throws what it threw):
// the exchange runs on the communication thread, after every step handed
// there before it, while the caller goes on. The caller keeps `input` and
// `out` from being reused until it has waited.
std::function<void()> start(const LibraryCall& call, const void* input, void* out);

}  // namespace aj::comm
