#include "repl/scan.hpp"

#include <cctype>
#include <string>

namespace aj::repl {

namespace {

bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

Scan scan(std::string_view s) {
  Scan r;
  int depth = 0;
  std::size_t brace_end = std::string_view::npos;  // just after a depth-0 '}'
  const std::size_t n = s.size();
  std::size_t i = 0;
  auto significant = [&](std::size_t at) {  // a code character at `at`
    if (brace_end != std::string_view::npos) {
      if (is_word(s[at]) || s[at] == '"' || s[at] == '\'') r.tail_begin = brace_end;
      brace_end = std::string_view::npos;
    }
  };
  while (i < n) {
    char c = s[i];
    if (c == '/' && i + 1 < n && s[i + 1] == '/') {  // line comment
      while (i < n && s[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '*') {  // block comment
      std::size_t end = s.find("*/", i + 2);
      if (end == std::string_view::npos) {
        r.complete = false;
        return r;
      }
      i = end + 2;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    significant(i);
    if (c == 'R' && i + 1 < n && s[i + 1] == '"' && (i == 0 || !is_word(s[i - 1]) || s[i - 1] == '8' ||
                                                    s[i - 1] == 'u' || s[i - 1] == 'U' || s[i - 1] == 'L')) {
      // Raw string R"delim( ... )delim".
      std::size_t open = s.find('(', i + 2);
      if (open == std::string_view::npos) {
        r.complete = false;
        return r;
      }
      std::string close = ")" + std::string(s.substr(i + 2, open - i - 2)) + "\"";
      std::size_t end = s.find(close, open + 1);
      if (end == std::string_view::npos) {
        r.complete = false;
        return r;
      }
      i = end + close.size();
      r.code_end = i;
      continue;
    }
    bool digit_separator = c == '\'' && i > 0 && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                           i + 1 < n && std::isxdigit(static_cast<unsigned char>(s[i + 1]));
    if ((c == '"' || c == '\'') && !digit_separator) {
      std::size_t j = i + 1;
      while (j < n && s[j] != c && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
      if (j >= n || s[j] == '\n') {  // unterminated: an error for clang to report, not more input
        i = j;
        r.code_end = j;
        continue;
      }
      i = j + 1;
      r.code_end = i;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (depth == 0 && c == ';') r.tail_begin = i + 1;
    if (depth == 0 && c == '}') brace_end = i + 1;
    ++i;
    r.code_end = i;
  }
  // A line ending in '\' continues, as in C++ and clang-repl.
  if (depth > 0 || (r.code_end > 0 && s[r.code_end - 1] == '\\')) r.complete = false;
  return r;
}

}  // namespace aj::repl
