// The interpreted C++ run at start: arrayjit, `using namespace aj;` and the
// ajrepl:: helpers the REPL's generated code calls (value printing, %time, %dot).
#pragma once

namespace aj::repl {
extern const char* const kPrelude;
}
