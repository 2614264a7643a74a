#include "repl/session.hpp"

#include <arrayjit/arrayjit.hpp>
#include <clang/AST/Decl.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/Stmt.h>
#include <clang/Basic/DiagnosticSema.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Interpreter/Interpreter.h>
#include <clang/Interpreter/PartialTranslationUnit.h>
#include <cxxabi.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/TargetSelect.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <regex>
#include <typeinfo>

#include "repl/prelude_text.hpp"
#include "repl/scan.hpp"

extern char** environ;

namespace aj::repl {

const char* const kHelp = R"(arrayjit REPL: C++20, with <arrayjit/arrayjit.hpp> included and `using namespace aj;`.

  auto a = arange(6).reshape({2, 3});   declarations and statements end with ';'
  a * 2                                 a bare expression (no ';') prints its value
  for (int i = 0; i < 3; ++i) {         open brackets continue on the next line
    a = a + 1; }                        (as does a line ending in '\')
  if (n > 3) { ... }                    an if block waits for the next line: an `else`
  else { ... }                          there continues it, anything else (or an empty
                                        line) runs it first; so do catch after try

  %explain EXPR   the optimizer's plan for an array: kernels, fused ops, buffers
  %dot EXPR       write the array's plan picture to NAME.dot (NAME is EXPR when it is a
                  variable, else "graph"), and NAME.svg / NAME.png when Graphviz's
                  dot is installed
  %time EXPR      run EXPR once (evaluating an Array result) and print the CPU and
                  wall time, then the value; compiling kernels not seen before is
                  not counted (the note after the times says how long it took)
  %profile EXPR   run EXPR once under aj::profile: a table of its kernels by time (calls,
                  GB/s, % of the triad), the trace in profile.json (Perfetto,
                  chrome://tracing), then the value
  %stats [reset]  aj::stats(): evaluations, kernels, compiles, buffers (reset: zero them)
  %help           this text
  %quit           leave (as does end of input, Ctrl-D)

An exception prints its message and the line it came from; the input that threw
is undone and every earlier variable keeps its value. Ctrl-C while an input runs
interrupts its evaluation the same way (aj::Error "aj: interrupted", at the next
kernel launch or block of a long kernel); while typing, it drops the line.
)";

// Clang's diagnostics, printed as "<input>:LINE:COL: error: ..." with the
// offending line and a caret. Quiet while the REPL tries whether an input
// reads as an expression.
class Diagnostics : public clang::DiagnosticConsumer {
 public:
  bool quiet = false;

  void HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic& info) override {
    DiagnosticConsumer::HandleDiagnostic(level, info);  // counts errors
    // Every input is its own buffer, so redefinitions also name the
    // "additional include site" of the previous one: noise here.
    if (quiet || info.getID() == clang::diag::note_redefinition_include_same_file) return;
    llvm::SmallString<256> msg;
    info.FormatDiagnostic(msg);
    std::fflush(stdout);
    std::string where, source, caret;
    if (info.hasSourceManager() && info.getLocation().isValid()) {
      const clang::SourceManager& sm = info.getSourceManager();
      clang::SourceLocation loc = sm.getExpansionLoc(info.getLocation());
      clang::PresumedLoc p = sm.getPresumedLoc(loc);
      if (p.isValid()) {
        where = std::string(p.getFilename()) + ":" + std::to_string(p.getLine()) + ":" +
                std::to_string(p.getColumn()) + ": ";
        auto [file, offset] = sm.getDecomposedLoc(loc);
        llvm::StringRef buf = sm.getBufferData(file);
        std::size_t begin = buf.rfind('\n', offset);  // searches [0, offset)
        begin = begin == llvm::StringRef::npos ? 0 : begin + 1;
        std::size_t end = buf.find('\n', offset);
        source = buf.substr(begin, end == llvm::StringRef::npos ? llvm::StringRef::npos : end - begin).str();
        caret.assign(offset - begin, ' ');
        for (std::size_t i = 0; i < caret.size(); ++i)
          if (source[i] == '\t') caret[i] = '\t';
        caret += '^';
      }
    }
    const char* name = level == clang::DiagnosticsEngine::Note      ? "note"
                       : level == clang::DiagnosticsEngine::Remark  ? "remark"
                       : level == clang::DiagnosticsEngine::Warning ? "warning"
                       : level == clang::DiagnosticsEngine::Fatal   ? "fatal error"
                                                                    : "error";
    std::fprintf(stderr, "%s%s: %s\n", where.c_str(), name, msg.c_str());
    if (!source.empty()) std::fprintf(stderr, "  %s\n  %s\n", source.c_str(), caret.c_str());
  }
};

namespace {

// The -I flags that find arrayjit/arrayjit.hpp: the installed include folder
// beside this executable, else the source tree this REPL was built from
// (whose public headers are in two folders: core's and the leaf ones of base).
std::vector<std::string> include_flags() {
  std::string exe = llvm::sys::fs::getMainExecutable(nullptr, reinterpret_cast<void*>(&include_flags));
  llvm::SmallString<256> dir(llvm::sys::path::parent_path(exe));
  llvm::sys::path::append(dir, AJ_REPL_INSTALL_INCLUDE_FROM_BIN);
  llvm::SmallString<256> header(dir);
  llvm::sys::path::append(header, "arrayjit", "arrayjit.hpp");
  if (llvm::sys::fs::exists(header)) return {"-I" + std::string(dir)};
  return {"-I" AJ_REPL_SOURCE_INCLUDE_DIR, "-I" AJ_REPL_SOURCE_BASE_INCLUDE_DIR};
}

std::string demangle(const char* name) {
  int status = 0;
  char* s = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && s ? s : name;
  std::free(s);
  return out;
}

std::string trim(const std::string& s) {
  std::size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// Where `prog` is found on PATH ("" when it is not).
std::string which(const std::string& prog) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "";
  std::size_t start = 0;
  while (start <= p.size()) {
    std::size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string cand = (end > start ? p.substr(start, end - start) : ".") + "/" + prog;
    if (::access(cand.c_str(), X_OK) == 0) return cand;
    start = end + 1;
  }
  return "";
}

// Runs argv without a shell; true when it exits with status 0.
bool spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string line_directive(int line) { return "#line " + std::to_string(line) + " \"<input>\"\n"; }

// Whether the PCH is older than a header it was built from (its depfile,
// written next to it, lists them): clang refuses a PCH whose inputs changed,
// and the interpreter it was handed to does not survive that refusal.
bool pch_stale(const std::string& pch) {
  llvm::sys::fs::file_status built;
  if (llvm::sys::fs::status(pch, built)) return true;
  std::FILE* f = std::fopen((pch + ".d").c_str(), "r");
  if (!f) return false;  // (an installed PCH: its headers are installed with it)
  std::string text;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  std::fclose(f);
  bool stale = false, first = true;
  std::size_t k = 0;
  while (k < text.size() && !stale) {
    while (k < text.size() && (std::isspace(static_cast<unsigned char>(text[k])) || text[k] == '\\')) ++k;
    std::size_t e = k;
    while (e < text.size() && !std::isspace(static_cast<unsigned char>(text[e]))) ++e;
    if (e == k) break;
    std::string path = text.substr(k, e - k);
    k = e;
    if (first) {  // the target, "prelude.pch:"
      first = false;
      continue;
    }
    llvm::sys::fs::file_status st;
    stale = llvm::sys::fs::status(path, st) || st.getLastModificationTime() > built.getLastModificationTime();
  }
  return stale;
}

}  // namespace

std::unique_ptr<Session> Session::create(const Options& opts, std::string& error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  // The PCH was built from the headers in the source tree: the interpreter
  // must include those (a second path to the same header would define it twice).
  const bool stale = opts.pch && llvm::sys::fs::exists(AJ_REPL_PCH) && pch_stale(AJ_REPL_PCH);
  if (stale && opts.verbose) {
    std::fprintf(stderr, "arrayjit-repl: a header changed since the prelude was precompiled (%s); parsing it\n", AJ_REPL_PCH);
  }
  if (opts.pch && !stale && llvm::sys::fs::exists(AJ_REPL_PCH)) {
    auto s = start(opts, {"-include-pch", AJ_REPL_PCH, "-I" AJ_REPL_SOURCE_INCLUDE_DIR,
                                  "-I" AJ_REPL_SOURCE_BASE_INCLUDE_DIR}, nullptr, error);
    if (s) {
      if (opts.verbose) std::fprintf(stderr, "arrayjit-repl: prelude precompiled (%s)\n", AJ_REPL_PCH);
      return s;
    }
    if (opts.verbose)
      std::fprintf(stderr, "arrayjit-repl: the precompiled prelude did not load (%s); parsing it\n", error.c_str());
  }
  const std::vector<std::string> includes = include_flags();
  auto s = start(opts, includes, kPrelude, error);
  if (s && opts.verbose) {
    std::fprintf(stderr, "arrayjit-repl: prelude parsed (headers from %s)\n", includes.front().c_str() + 2);
  }
  return s;
}

std::unique_ptr<Session> Session::start(const Options& opts, const std::vector<std::string>& flags,
                                        const char* prelude, std::string& error) {
  std::vector<std::string> args = {"-std=c++20", "-O0", "-g0", "-resource-dir", AJ_REPL_CLANG_RESOURCE_DIR};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), opts.clang_args.begin(), opts.clang_args.end());
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  clang::IncrementalCompilerBuilder builder;
  builder.SetCompilerArgs(argv);
  auto ci = builder.CreateCpp();
  if (!ci) {
    error = llvm::toString(ci.takeError());
    return nullptr;
  }
  auto diags = std::make_unique<Diagnostics>();
  Diagnostics* d = diags.get();
  d->quiet = prelude == nullptr;  // a PCH that does not load is not the user's error
  (*ci)->getDiagnostics().setClient(diags.release(), /*ShouldOwnClient=*/true);
  auto interp = clang::Interpreter::create(std::move(*ci));
  d->quiet = false;
  if (!interp) {
    error = llvm::toString(interp.takeError());
    return nullptr;
  }
  std::unique_ptr<Session> s(new Session);
  s->interp_ = std::move(*interp);
  s->diags_ = d;
  if (prelude && s->execute(prelude, 0, false) != Outcome::ok) {
    error = "the prelude (#include <arrayjit/arrayjit.hpp> from " + include_flags().front().substr(2) + ") did not compile";
    return nullptr;
  }
  return s;
}

Session::~Session() = default;

clang::PartialTranslationUnit* Session::parse(const std::string& code, bool quiet) {
  diags_->quiet = quiet;
  auto ptu = interp_->Parse(code);
  diags_->quiet = false;
  if (!ptu) {
    llvm::consumeError(ptu.takeError());  // "Parsing failed.": the diagnostics said why
    return nullptr;
  }
  return &*ptu;
}

// Runs `f` (which runs interpreted code); an llvm::Error or a C++ exception
// from it is reported with the line it names.
Session::Outcome Session::guarded(int line, llvm::function_ref<llvm::Error()> f) {
  std::string kind, what;
  try {
    llvm::Error err = f();
    if (!err) return Outcome::ok;
    kind = "error", what = llvm::toString(std::move(err));  // e.g. a symbol declared but never defined
  } catch (const aj::Error& e) {
    kind = "aj::Error", what = e.what();
  } catch (const std::exception& e) {
    kind = demangle(typeid(e).name()), what = e.what();
  } catch (...) {
    const std::type_info* t = abi::__cxa_current_exception_type();
    kind = "exception", what = (t ? demangle(t->name()) : "of unknown type") + " (not a std::exception)";
  }
  report_exception(kind, what, line);
  return Outcome::exception;
}

// Runs the input's initializers and top-level statements; one that fails is
// undone (after its exception object is gone: its destructor may live there).
Session::Outcome Session::run_ptu(clang::PartialTranslationUnit& ptu, int line) {
  if (!ptu.TheModule) return Outcome::ok;
  Outcome o = guarded(line, [&] { return interp_->Execute(ptu); });
  if (o != Outcome::ok) undo();
  return o;
}

void Session::undo() {
  if (llvm::Error err = interp_->Undo())
    std::fprintf(stderr, "(could not undo the failed input: %s)\n", llvm::toString(std::move(err)).c_str());
}

Session::Outcome Session::execute(const std::string& code, int line, bool quiet) {
  clang::PartialTranslationUnit* ptu = parse(code, quiet);
  return ptu ? run_ptu(*ptu, line) : Outcome::compile_error;
}

std::string Session::new_wrapper(const std::string& body, int line, std::string& fn) {
  fn = "ajrepl_in" + std::to_string(++wrappers_);
  return "extern \"C\" void " + fn + "() {\n" + line_directive(line) + body + "\n}";
}

// Defines the wrapper `ptu` holds and calls it from here. Looking its address
// up links it first: a symbol it lacks is reported and the wrapper undone.
Session::Outcome Session::call(clang::PartialTranslationUnit& ptu, const std::string& fn, int line) {
  Outcome o = run_ptu(ptu, line);
  if (o != Outcome::ok) return o;
  auto addr = interp_->getSymbolAddress(fn);
  if (!addr) {
    o = guarded(line, [&] { return addr.takeError(); });
    undo();
    return o;
  }
  auto* f = addr->toPtr<void (*)()>();
  return guarded(line, [&] {
    f();
    return llvm::Error::success();
  });
}

// `extern "C" void ajrepl_inN() { body }`, called.
Session::Outcome Session::call_wrapped(const std::string& body, int line, bool quiet) {
  std::string fn;
  clang::PartialTranslationUnit* ptu = parse(new_wrapper(body, line, fn), quiet);
  return ptu ? call(*ptu, fn, line) : Outcome::compile_error;
}

namespace {

// Whether `t` is, or is built on (a pointer to, a template argument of), a
// lambda's closure type.
bool has_closure_type(clang::QualType t) {
  if (t.isNull()) return false;
  t = t.getCanonicalType().getNonReferenceType();
  while (t->isPointerType() || t->isArrayType()) {
    t = t->isPointerType() ? t->getPointeeType() : clang::QualType(t->getArrayElementTypeNoTypeQual(), 0);
  }
  const clang::CXXRecordDecl* rd = t->getAsCXXRecordDecl();
  if (!rd) return false;
  if (rd->isLambda()) return true;
  auto* spec = llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(rd);
  if (!spec) return false;
  std::function<bool(const clang::TemplateArgument&)> arg = [&](const clang::TemplateArgument& a) {
    if (a.getKind() == clang::TemplateArgument::Type) return has_closure_type(a.getAsType());
    if (a.getKind() == clang::TemplateArgument::Pack) {
      for (const clang::TemplateArgument& e : a.pack_elements())
        if (arg(e)) return true;
    }
    return false;
  };
  for (const clang::TemplateArgument& a : spec->getTemplateArgs().asArray())
    if (arg(a)) return true;
  return false;
}

}  // namespace

// Statements run inside a function; an input that declares something at its
// outer level (a variable, a struct, a using-directive: a DeclStmt when put
// in a function) or that a function cannot hold (a function definition, a
// template, #include) runs at the top level, where its names stay.
//
// There, a variable whose type is a lambda's (`auto f = [](...) {...};`,
// `auto g = aj::compile([](...) {...});`) is declared `inline`. A lambda at
// namespace scope has no linkage, so neither has the variable, and clang's
// incremental code generation then emits an internal copy of the variable,
// initialized again, in every later input that names it: each input saw a
// fresh `g` (g.counts() read 0), and in `auto r = g(a);` the copy's
// initializer ran after r's, which called a `g` not yet made (SIGSEGV). In
// an inline variable's initializer a lambda has linkage (the variable is its
// context), so every input refers to the one variable.
Session::Outcome Session::run_statements(const std::string& body, int line) {
  std::vector<std::size_t> make_inline;  // offsets in `body` where "inline " goes
  if (body.find_first_not_of(" \t\r\n") != std::string::npos && trim(body)[0] != '#') {
    std::string fn;
    const std::string wrapper = new_wrapper(body, line, fn);
    const std::size_t body_at = wrapper.size() - body.size() - 2;  // the wrapper ends with "\n}"
    clang::PartialTranslationUnit* ptu = parse(wrapper, /*quiet=*/true);
    bool declares = false;
    if (ptu) {
      const clang::SourceManager& sm = interp_->getCompilerInstance()->getSourceManager();
      for (clang::Decl* d : ptu->TUPart->decls()) {
        auto* spec = llvm::dyn_cast<clang::LinkageSpecDecl>(d);  // the extern "C" around it
        auto* f = spec ? llvm::dyn_cast_or_null<clang::FunctionDecl>(*spec->decls_begin()) : nullptr;
        if (!f || f->getName() != fn || !f->getBody()) continue;
        for (clang::Stmt* st : f->getBody()->children()) {
          auto* ds = llvm::dyn_cast<clang::DeclStmt>(st);
          if (!ds) continue;
          declares = true;
          bool closure = false;
          for (clang::Decl* e : ds->decls()) {
            auto* v = llvm::dyn_cast<clang::VarDecl>(e);
            if (!v || llvm::isa<clang::DecompositionDecl>(v) || v->getStorageClass() != clang::SC_None) {
              closure = false;  // (static, extern, a structured binding: cannot be inline)
              break;
            }
            closure |= has_closure_type(v->getType());
          }
          clang::SourceLocation at = sm.getExpansionLoc(ds->getBeginLoc());
          const std::size_t offset = sm.getFileOffset(at);
          if (closure && offset >= body_at && offset < body_at + body.size()) make_inline.push_back(offset - body_at);
        }
      }
    }
    if (ptu && !declares) return call(*ptu, fn, line);
    if (ptu) undo();  // parsed, never run
  }
  std::string code = body;
  for (auto it = make_inline.rbegin(); it != make_inline.rend(); ++it) code.insert(*it, "inline ");
  return execute(line_directive(line) + code + "\n", line, false);
}

void Session::report_exception(const std::string& kind, const std::string& what, int line) {
  std::cout << std::flush;
  std::fflush(stdout);
  std::fprintf(stderr, "%s: %s\n", kind.c_str(), what.c_str());
  // The line typed: the one aj::Error's "(at <input>:N)" names, else the input's first.
  static const std::regex at(R"(\(at <input>:(\d+)\))");
  std::smatch m;
  int n = std::regex_search(what, m, at) ? std::stoi(m[1]) : line;
  if (auto it = lines_.find(n); it != lines_.end())
    std::fprintf(stderr, "  at line %d: %s\n", n, trim(it->second).c_str());
}

bool Session::run(const std::string& text, int line) {
  std::size_t begin = 0;
  for (int n = line;; ++n) {  // keep every line typed, for error messages
    std::size_t end = text.find('\n', begin);
    lines_[n] = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  bool go_on = true;
  std::string t = trim(text);
  if (t.empty()) return true;
  if (t[0] == '%') {
    go_on = command(t, line);
  } else {
    run_code(text, line);
  }
  std::cout << std::flush;
  std::fflush(stdout);
  return go_on;
}

void Session::run_code(const std::string& text, int line) {
  Scan s = scan(text);
  if (s.code_end == 0) return;  // only comments
  std::string code = text.substr(0, s.code_end);
  std::string body = code.substr(0, s.tail_begin), tail = code.substr(s.tail_begin);
  if (trim(tail).empty() || trim(tail)[0] == '#' || code.back() == ';' || s.tail_is_compound) {
    if (run_statements(text, line) != Outcome::ok) ++failures_;
    return;
  }
  // A trailing expression without ';' prints its value. Whether it is one
  // is up to clang: the tail is tried quietly as `show((tail, nothing));`,
  // and when that does not compile it runs as written, with the ';' added.
  if (trim(body).size() && run_statements(body, line) != Outcome::ok) {
    ++failures_;
    return;
  }
  int tail_line = line + static_cast<int>(std::count(body.begin(), body.end(), '\n'));
  Outcome o = call_wrapped("ajrepl::show((" + tail + ", ajrepl::nothing));", tail_line, /*quiet=*/true);
  if (o == Outcome::compile_error) o = run_statements(tail + ";", tail_line);
  if (o != Outcome::ok) ++failures_;
}

bool Session::command(const std::string& text, int line) {
  std::size_t sp = text.find_first_of(" \t");
  std::string name = text.substr(1, sp == std::string::npos ? std::string::npos : sp - 1);
  std::string arg = sp == std::string::npos ? "" : trim(text.substr(sp));
  if (!arg.empty() && arg.back() == ';') arg.pop_back();
  auto need_arg = [&]() {
    if (!arg.empty()) return true;
    std::fprintf(stderr, "%%%s needs an expression (see %%help)\n", name.c_str());
    ++failures_;
    return false;
  };
  auto run_ok = [&](const std::string& code, bool quiet = false) {
    Outcome o = call_wrapped(code, line, quiet);
    if (o == Outcome::exception || (o == Outcome::compile_error && !quiet)) ++failures_;
    return o;
  };
  if (name == "quit" || name == "exit" || name == "q") return false;
  if (name == "help") {
    std::cout << kHelp;
  } else if (name == "stats") {
    if (arg == "reset") {
      aj::reset_stats();
    } else {
      std::cout << aj::stats() << '\n';
    }
  } else if (name == "explain") {
    if (need_arg()) run_ok("std::cout << aj::explain(" + arg + ") << std::flush;");
  } else if (name == "time") {
    // An expression (its value is printed after the times), else statements.
    if (need_arg() &&
        run_ok("ajrepl::time_it([]() -> decltype(auto) { return (" + arg + "); });", true) ==
            Outcome::compile_error)
      run_ok("ajrepl::time_it([] { " + arg + "; });");
  } else if (name == "profile") {
    if (need_arg() &&
        run_ok("ajrepl::profile_it([]() -> decltype(auto) { return (" + arg + "); }, \"profile.json\");", true) ==
            Outcome::compile_error)
      run_ok("ajrepl::profile_it([] { " + arg + "; }, \"profile.json\");");
  } else if (name == "dot") {
    if (need_arg()) dot(arg, line);
  } else {
    std::fprintf(stderr, "unknown command %%%s (try %%help)\n", name.c_str());
    ++failures_;
  }
  return true;
}

void Session::dot(const std::string& expr, int line) {
  std::string base = is_identifier(expr) ? expr : "graph";
  std::string file = base + ".dot";
  // The optimized plan (kernels as clusters, buffers, in-place edges, source
  // lines); the traced graph when the array is evaluated already.
  Outcome o = call_wrapped("ajrepl::write_text(\"" + file + "\", aj::to_dot(std::vector<aj::Array>{" + expr + "}));",
                           line, false);
  if (o != Outcome::ok) {
    ++failures_;
    return;
  }
  std::string written = file;
  std::string dot = which("dot");
  for (const char* fmt : {"svg", "png"}) {
    std::string out = base + "." + fmt;
    if (!dot.empty() && spawn({dot, std::string("-T") + fmt, file, "-o", out})) written += ", " + out;
  }
  std::cout << "wrote " << written;
  if (dot.empty()) std::cout << " (no .svg/.png: Graphviz's dot is not on PATH)";
  std::cout << '\n';
}

}  // namespace aj::repl
