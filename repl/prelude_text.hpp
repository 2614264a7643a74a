// The text of repl/prelude.hpp, built into the REPL (prelude_text.cpp is
// generated from it) for when its precompiled form cannot be used.
#pragma once

namespace aj::repl {
extern const char* const kPrelude;
}
