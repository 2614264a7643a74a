// arrayjit-repl: an interactive C++ session with arrayjit loaded, built on
// clang's incremental interpreter (LLVM 19). On a terminal it edits lines and
// keeps a history (libedit); from a pipe it reads a script line by line.
//
//   arrayjit-repl [--echo] [--fail-on-error] [--no-pch] [--verbose] [CLANG_FLAGS...]
//
// Exit status: 0 on %quit and at end of input (1 with --fail-on-error when
// an input failed; 2 when the interpreter could not start).
#include <arrayjit/arrayjit.hpp>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "repl/scan.hpp"
#include "repl/session.hpp"

#if AJ_REPL_HAVE_LIBEDIT
#include <editline/readline.h>
#endif

namespace {

constexpr const char* kPrompt = "aj> ";
constexpr const char* kMore = "..> ";

const char* kUsage = R"(usage: arrayjit-repl [--echo] [--fail-on-error] [--no-pch] [--verbose] [CLANG_FLAGS...]
  --echo            print each input line after the prompt before its output
                    (a transcript when a script is piped in)
  --fail-on-error   exit with status 1 at the end when an input failed
  --no-pch          parse the prelude (arrayjit.hpp ...) instead of loading it precompiled
  --verbose         say on stderr how the prelude was loaded
  CLANG_FLAGS       passed to the interpreter, e.g. -I DIR, -DNAME
Type %help in the session for its commands.
)";

// Ctrl-C while an input runs asks arrayjit to stop (aj::interrupt: the
// evaluation throws aj::Error "interrupted" at its next kernel step or block,
// the input is undone and the session goes on). While a line is typed, on a
// terminal it drops the line; from a pipe it ends the process, as it did
// before the handler. (Plain C++ that evaluates nothing runs on to its end.)
volatile sig_atomic_t g_interrupted = 0;
volatile sig_atomic_t g_running = 0;  // an input runs
volatile sig_atomic_t g_tty = 0;
void on_interrupt(int) {
  if (g_running) {
    aj::interrupt();  // async-signal-safe
    if (g_tty) (void)!write(STDERR_FILENO, "\n", 1);  // the report starts after the terminal's "^C"
    return;
  }
  if (!g_tty) {  // the default action: end
    signal(SIGINT, SIG_DFL);
    raise(SIGINT);
    return;
  }
  g_interrupted = 1;
}

// One physical line, with or without line editing.
enum class Read { line, interrupted, end };
class LineReader {
 public:
  explicit LineReader(bool edit) : edit_(edit) {
#if AJ_REPL_HAVE_LIBEDIT
    if (edit_) {
      if (const char* home = std::getenv("HOME")) history_ = std::string(home) + "/.arrayjit_repl_history";
      using_history();
      if (!history_.empty()) read_history(history_.c_str());
      rl_bind_key('\t', rl_insert);  // a tab is indentation, not file-name completion
    }
#else
    edit_ = false;
#endif
  }

  Read read(const char* prompt, std::string& line) {
    g_interrupted = 0;
#if AJ_REPL_HAVE_LIBEDIT
    if (edit_) {
      char* l = readline(prompt);
      if (g_interrupted) {
        std::free(l);
        return Read::interrupted;
      }
      if (!l) return Read::end;
      line = l;
      std::free(l);
      if (!line.empty()) add_history(line.c_str());
      return Read::line;
    }
#endif
    (void)prompt;
    return std::getline(std::cin, line) ? Read::line : Read::end;
  }

  void save() {
#if AJ_REPL_HAVE_LIBEDIT
    if (edit_ && !history_.empty()) write_history(history_.c_str());
#endif
  }

 private:
  bool edit_;
  std::string history_;
};

// Leaves without running static destructors: arrays made by interpreted code
// registered theirs with atexit, and their code is gone with the interpreter.
[[noreturn]] void leave(int status) {
  std::cout << std::flush;
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(status);
}

}  // namespace

int main(int argc, char** argv) {
  aj::repl::Options opts;
  bool echo = false, fail_on_error = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--echo") {
      echo = true;
    } else if (a == "--fail-on-error") {
      fail_on_error = true;
    } else if (a == "--no-pch") {
      opts.pch = false;
    } else if (a == "--verbose") {
      opts.verbose = true;
    } else if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else {
      opts.clang_args.push_back(a);
    }
  }
  const bool tty = ::isatty(STDIN_FILENO) && ::isatty(STDOUT_FILENO);
  std::string error;
  auto session = aj::repl::Session::create(opts, error);
  if (!session) {
    std::fprintf(stderr, "arrayjit-repl: the interpreter did not start: %s\n", error.c_str());
    leave(2);
  }
  // The host JIT's one-time setup (LLVM's target machine for this CPU, about
  // 1-2 ms) is done now, not by the session's first evaluation, where a
  // %time of a small expression would show it.
  (void)aj::jit::target_description();
  if (tty) {
    std::printf("arrayjit %s REPL (clang %s, C++20). %%help for help, %%quit to leave.\n", aj::version(),
                aj::llvm_version());
  }
  g_tty = tty;
  {
    struct sigaction sa = {};
    sa.sa_handler = on_interrupt;
    // On a terminal no SA_RESTART: the read returns and drops the line. From
    // a pipe the read goes on (std::getline would take EINTR for the end).
    sa.sa_flags = tty ? 0 : SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
  }
  LineReader reader(tty);
  std::string input, line;
  int lineno = 0, first = 0;
  bool quit = false;
  aj::repl::Scan scanned;  // the input's scan so far
  auto run_input = [&] {
    std::string text;
    text.swap(input);
    scanned = {};
    aj::interrupt(false);  // a Ctrl-C that came before this input is not for it
    g_running = 1;
    const bool go_on = session->run(text, first);
    g_running = 0;
    return go_on;
  };
  for (Read r; (r = reader.read(input.empty() ? kPrompt : kMore, line)) != Read::end;) {
    if (r == Read::interrupted) {
      std::printf("^C\n");
      input.clear();
      scanned = {};
      continue;
    }
    ++lineno;
    // A complete input that may go on (an `if` whose `else` may follow, a
    // `try` whose next `catch` may): this line either continues it or
    // (another statement, an empty line) the input runs first and this
    // line starts the next one.
    if (!input.empty() && scanned.continued_by && !aj::repl::continues(scanned, line) && !run_input()) {
      quit = true;
      break;
    }
    if (echo) std::printf("%s%s\n", input.empty() ? kPrompt : kMore, line.c_str());
    if (input.empty()) first = lineno;
    input += input.empty() ? line : "\n" + line;
    scanned = aj::repl::scan(input);
    if (!scanned.complete || scanned.continued_by) continue;
    if (!run_input()) {
      quit = true;
      break;
    }
  }
  // An unfinished last input (clang says what is missing), or one that might have gone on.
  if (!quit && !input.empty()) run_input();
  if (tty && !quit) std::printf("\n");  // end the prompt line Ctrl-D left
  reader.save();
  leave(fail_on_error && session->failures() > 0 ? 1 : 0);
}
