// Interrupting an evaluation (the REPL's Ctrl-C): aj::interrupt() asks the
// evaluations running now to stop. The step loop looks at the request before
// each step (kernel launch, library call, view) and a host kernel between its
// blocks; the evaluation that sees it takes it back and throws aj::Error
// "aj: interrupted". Values computed before stay computed, the rest stays
// lazy: evaluating again starts where the interrupted run stopped. A kernel
// that writes over its input in place is not abandoned halfway (the input
// would be lost): the request is seen at the next step.
// Cost: one relaxed atomic load per step and per block.
#pragma once

namespace aj {

// Async-signal-safe (a lock-free atomic store): a SIGINT handler may call it.
// interrupt(false) withdraws a request no evaluation has seen yet.
void interrupt(bool on = true) noexcept;

}  // namespace aj
