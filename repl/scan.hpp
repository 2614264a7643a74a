// A small C++ scanner for the REPL: is the input complete (brackets closed, no
// open string or comment, no trailing backslash, no statement that C++ says
// must go on), and where does its last statement begin. It skips comments,
// string/char literals (raw strings too) and counts (), [] and {}; then it
// reads the statements at the outer level with a bracketed group as one
// token, enough to know `if (...) {...}` from `... else {...}`: enough to
// split lines, not a parser.
#pragma once

#include <cstddef>
#include <string_view>

namespace aj::repl {

struct Scan {
  bool complete = true;     // false: keep reading lines
  std::size_t code_end = 0; // one past the last character that is not space or comment
  // Where the trailing statement starts: after the last statement at the
  // outer level that ended (with ';', or with '}' where a block ends one:
  // `[]{ ... }()` stays whole, `if (c) {...} else {...}` too).
  std::size_t tail_begin = 0;
  // The trailing statement is a compound one (if, for, while, do, switch, try,
  // a block): never a value to print.
  bool tail_is_compound = false;
  // Complete, but the last statement may go on (C++ cannot tell yet): an
  // `if` without its `else`, a `try` block's handlers another `catch` may
  // follow. Then this is the word that would continue it ("else", "catch"),
  // else null. The REPL reads the next line before it runs the input.
  const char* continued_by = nullptr;
};

Scan scan(std::string_view text);

// Whether `line` (the next line typed) continues an input whose scan is `s`:
// its first word is s.continued_by, or it starts with a comment.
bool continues(const Scan& s, std::string_view line);

}  // namespace aj::repl
