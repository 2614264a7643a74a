#include "repl/scan.hpp"

#include <cctype>
#include <string>
#include <vector>

namespace aj::repl {

namespace {

bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// A token at the outer level: a word, a bracketed group (from its opening
// bracket to its closing one), a preprocessor line, or anything else (an
// operator character, a literal).
struct Token {
  enum Kind { word, group, directive, other } kind;
  std::size_t begin, end;
  char c;  // a group's opening bracket, an other's first character
};

// The statements at the outer level, read from the tokens. A statement ends
// `done`; `incomplete` when C++ needs more (`try {...}` without a handler,
// `do ...` without its `while (...);`, `if (c)` without a statement);
// `open_else` / `open_catch` when it is complete but the next word may still
// continue it.
class Statements {
 public:
  enum End { done, incomplete, open_else, open_catch };
  Statements(std::string_view s, const std::vector<Token>& t) : s_(s), t_(t) {}

  bool at_end() const { return i_ >= t_.size(); }
  std::size_t begin() const { return t_[i_].begin; }

  // Reads one statement; `compound` says whether it was one (if, for, a block ...).
  End statement(bool& compound) {
    compound = true;
    if (t_[i_].kind == Token::directive) {
      ++i_;
      compound = false;
      return done;
    }
    if (word("if")) {
      ++i_;
      if (word("constexpr")) ++i_;
      if (at_end()) return incomplete;
      if (!group('(')) return rest();
      ++i_;
      End e = substatement();
      if (e != done) return e;  // an inner `if` takes the else
      if (at_end()) return open_else;
      if (!word("else")) return done;
      ++i_;
      return substatement();
    }
    if (word("try")) {
      ++i_;
      if (at_end()) return incomplete;
      if (!group('{')) return rest();
      ++i_;
      for (int handlers = 0;; ++handlers) {
        if (at_end()) return handlers ? open_catch : incomplete;
        if (!word("catch")) return done;  // (none: clang says what is missing)
        ++i_;
        for (char c : {'(', '{'}) {
          if (at_end()) return incomplete;
          if (!group(c)) return done;
          ++i_;
        }
      }
    }
    if (word("do")) {
      ++i_;
      End e = substatement();
      if (e == incomplete) return e;
      if (at_end()) return incomplete;  // `while (...);` must follow
      if (!word("while")) return done;
      ++i_;
      for (int k = 0; k < 2; ++k) {  // (c) ;
        if (at_end()) return incomplete;
        if (k == 0 ? !group('(') : !other(';')) return done;
        ++i_;
      }
      return done;
    }
    if (word("for") || word("while") || word("switch")) {
      ++i_;
      if (at_end()) return incomplete;
      if (!group('(')) return rest();
      ++i_;
      return substatement();
    }
    if (group('{')) {
      ++i_;
      return done;
    }
    compound = false;
    return rest();
  }

 private:
  bool word(const char* w) const {
    return !at_end() && t_[i_].kind == Token::word && s_.substr(t_[i_].begin, t_[i_].end - t_[i_].begin) == w;
  }
  bool group(char open) const { return !at_end() && t_[i_].kind == Token::group && t_[i_].c == open; }
  bool other(char c) const { return !at_end() && t_[i_].kind == Token::other && t_[i_].c == c; }

  // The statement a compound one controls: missing at the end of the input
  // is incomplete (`if (c)` then Enter: the block comes on the next line).
  End substatement() {
    if (at_end()) return incomplete;
    bool compound;
    return statement(compound);
  }

  // Any other statement: up to its ';', or up to a block a name follows (a
  // function's definition, `namespace n {...}`), or up to the end (a trailing
  // expression). `[]{ ... }()` goes on after its block.
  End rest() {
    while (!at_end()) {
      const Token& t = t_[i_++];
      if (t.kind == Token::other && t.c == ';') return done;
      if (t.kind == Token::group && t.c == '{' &&
          (at_end() || t_[i_].kind == Token::word || t_[i_].kind == Token::directive)) {
        return done;
      }
    }
    return done;
  }

  std::string_view s_;
  const std::vector<Token>& t_;
  std::size_t i_ = 0;
};

}  // namespace

Scan scan(std::string_view s) {
  Scan r;
  int depth = 0;
  std::vector<Token> tokens;  // at depth 0
  std::size_t group_begin = 0;  // where the outer group being read opened
  const std::size_t n = s.size();
  std::size_t i = 0;
  auto token = [&](Token::Kind kind, std::size_t begin, std::size_t end, char c) {
    if (depth == 0) tokens.push_back({kind, begin, end, c});
  };
  auto line_start = [&](std::size_t at) {  // only spaces before `at` on its line
    while (at > 0 && (s[at - 1] == ' ' || s[at - 1] == '\t')) --at;
    return at == 0 || s[at - 1] == '\n';
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
    if (c == '#' && depth == 0 && line_start(i)) {  // a directive, to its line's end ('\' continues it)
      std::size_t j = i;
      while (j < n && (s[j] != '\n' || (j > i && s[j - 1] == '\\'))) ++j;
      token(Token::directive, i, j, c);
      i = j;
      r.code_end = j;
      while (r.code_end > 0 && std::isspace(static_cast<unsigned char>(s[r.code_end - 1]))) --r.code_end;
      continue;
    }
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
      token(Token::other, i, end + close.size(), c);
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
        token(Token::other, i, j, c);
        i = j;
        r.code_end = j;
        continue;
      }
      token(Token::other, i, j + 1, c);
      i = j + 1;
      r.code_end = i;
      continue;
    }
    if (is_word(c)) {
      std::size_t j = i;
      while (j < n && is_word(s[j])) ++j;
      token(Token::word, i, j, c);
      i = j;
      r.code_end = i;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') {
      if (depth++ == 0) group_begin = i;
    } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
      if (--depth == 0) tokens.push_back({Token::group, group_begin, i + 1, s[group_begin]});
    } else {
      token(Token::other, i, i + 1, c);  // (a stray closing bracket too: clang reports it)
    }
    ++i;
    r.code_end = i;
  }
  // A line ending in '\' continues, as in C++ and clang-repl.
  if (depth > 0 || (r.code_end > 0 && s[r.code_end - 1] == '\\')) {
    r.complete = false;
    return r;
  }
  Statements st(s, tokens);
  Statements::End end = Statements::done;
  while (!st.at_end()) {
    r.tail_begin = st.begin();
    end = st.statement(r.tail_is_compound);
  }
  if (tokens.empty()) r.tail_begin = r.code_end;
  // The last statement ended with its ';': no trailing expression.
  if (!tokens.empty() && tokens.back().kind == Token::other && tokens.back().c == ';') r.tail_begin = r.code_end;
  r.complete = end != Statements::incomplete;
  r.continued_by = end == Statements::open_else ? "else" : end == Statements::open_catch ? "catch" : nullptr;
  return r;
}

bool continues(const Scan& s, std::string_view line) {
  if (!s.continued_by) return false;
  std::size_t b = line.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return false;
  if (line.substr(b, 2) == "//" || line.substr(b, 2) == "/*") return true;  // a comment between: read on
  std::string_view w = s.continued_by;
  return line.substr(b, w.size()) == w && (b + w.size() == line.size() || !is_word(line[b + w.size()]));
}

}  // namespace aj::repl
