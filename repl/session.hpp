// One REPL session: a clang::Interpreter with arrayjit loaded, the inputs
// typed so far (for error messages), and the % commands.
//
// Every input is compiled by clang's incremental interpreter and run at once:
// declarations at the top level, statements and printed expressions inside a
// function made for them, which the REPL then calls (clang 19 crashes on a
// lambda in a top-level statement).
// A `#line N "<input>"` in front of it makes aj::Error's "(at file:line)" and
// clang's diagnostics name the line the user typed. A C++ exception thrown by
// the input unwinds into the REPL, which prints it and undoes that input, so
// a failed `auto b = ...;` leaves no half-made `b` and every earlier variable
// stays as it was.
#pragma once

#include <llvm/ADT/STLFunctionalExtras.h>
#include <llvm/Support/Error.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace clang {
class Interpreter;
struct PartialTranslationUnit;
}

namespace aj::repl {

class Diagnostics;

struct Options {
  std::vector<std::string> clang_args;  // extra flags for the interpreter (-I, -D ...)
  bool pch = true;                      // start from the precompiled prelude where it loads
  bool verbose = false;                 // say on stderr how the prelude was loaded
};

class Session {
 public:
  // Builds the interpreter with the prelude (repl/prelude.hpp) loaded: its
  // precompiled form where that loads, else its text parsed. On failure
  // returns null and says why in `error`.
  static std::unique_ptr<Session> create(const Options& opts, std::string& error);
  ~Session();

  // Runs one complete input (a statement, declarations, a bare expression or
  // a % command) whose first line is line `line` of the session. Returns
  // false when the input asks to end the session (%quit).
  bool run(const std::string& text, int line);

  // How many inputs failed (compile error or exception) so far.
  int failures() const { return failures_; }

 private:
  Session() = default;
  // An interpreter with `flags` added; runs `prelude` when it is not null.
  static std::unique_ptr<Session> start(const Options& opts, const std::vector<std::string>& flags,
                                        const char* prelude, std::string& error);
  enum class Outcome { ok, compile_error, exception };
  clang::PartialTranslationUnit* parse(const std::string& code, bool quiet);
  Outcome guarded(int line, llvm::function_ref<llvm::Error()> f);
  Outcome run_ptu(clang::PartialTranslationUnit& ptu, int line);
  void undo();
  Outcome execute(const std::string& code, int line, bool quiet);
  std::string new_wrapper(const std::string& body, int line, std::string& fn);
  Outcome call(clang::PartialTranslationUnit& ptu, const std::string& fn, int line);
  Outcome call_wrapped(const std::string& body, int line, bool quiet);
  Outcome run_statements(const std::string& body, int line);
  void run_code(const std::string& text, int line);
  bool command(const std::string& text, int line);
  void dot(const std::string& expr, int line);
  void report_exception(const std::string& kind, const std::string& what, int line);

  std::unique_ptr<clang::Interpreter> interp_;
  Diagnostics* diags_ = nullptr;            // owned by the interpreter's DiagnosticsEngine
  std::map<int, std::string> lines_;        // every line typed, by number
  int failures_ = 0;
  int wrappers_ = 0;                        // functions made for statements so far
};

// The text of %help.
extern const char* const kHelp;

}  // namespace aj::repl
