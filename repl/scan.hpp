// A small C++ scanner for the REPL: is the input complete (brackets closed, no
// open string or comment, no trailing backslash), and where does its last
// statement begin. It skips comments, string/char literals (raw strings too)
// and counts (), [] and {}: enough to split lines, not a parser.
#pragma once

#include <cstddef>
#include <string_view>

namespace aj::repl {

struct Scan {
  bool complete = true;     // false: keep reading lines
  std::size_t code_end = 0; // one past the last character that is not space or comment
  // Where the trailing statement starts: after the last ';' or '}' at depth 0
  // (a '}' counts only when a name follows it, so `[]{ ... }()` stays whole).
  std::size_t tail_begin = 0;
};

Scan scan(std::string_view text);

}  // namespace aj::repl
