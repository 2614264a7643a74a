#!/usr/bin/env bash
# Tests of arrayjit-repl (ctest "repl"): first a script piped into it, then a
# session in a real terminal (tmux: send keys, read the pane). Both check
# printing, an error that does not end the session, the % commands and a
# status-0 exit on %quit and on end of input. Exit 77 (skip) when the REPL
# was not built or tmux is missing.
#
#   tests/repl/run_repl_tests.sh build/arrayjit-repl
set -u
REPL=${1:-}
if [[ -z $REPL || ! -x $REPL ]]; then
  echo "SKIP: arrayjit-repl not built (needs clang 19's libraries: clang-19 libclang-19-dev libclang-cpp19-dev)"
  exit 77
fi
REPL=$(cd "$(dirname "$REPL")" && pwd)/$(basename "$REPL")
work=$(mktemp -d)
export HOME=$work  # the history file goes here
cd "$work" || exit 1
socket=ajrepl-test-$$-0  # one tmux server per session: start() moves to the next
cleanup() {
  command -v tmux >/dev/null && tmux -L "$socket" kill-server 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

failed=0
pass() { echo "ok   $1"; }
fail() {
  echo "FAIL $1"
  [[ -n ${2:-} ]] && sed 's/^/     | /' "$2"
  failed=1
}
# has FILE NAME ERE: FILE contains a match of the extended regex.
has() { if grep -Eq -- "$3" "$1"; then pass "$2"; else fail "$2 (no /$3/)" "$1"; fi; }
hasnt() { if grep -Eq -- "$3" "$1"; then fail "$2 (found /$3/)" "$1"; else pass "$2"; fi; }

# --- 1. a script on standard input ---------------------------------------------------------
cat >script.cpp <<'EOF'
auto a = arange(4) * 3;
a
std::cout << a << std::endl;
auto b = a + ones({5});
a + 1
int n = 40;
n + 2
0.1 + 0.2
2.0 * 3
std::string("str") + "ing"
a.shape()
void nothing() {}
nothing()
undefined_name + 1
for (int i = 0; i < 2; ++i) {
  a = a + 1;
}
a
%explain a * 2 + 1
%time sum(a)
%profile sum(a * 2.5f)
%stats
%dot a
%help
%nonsense
[]{ return 5; }() + 100
int declared_only();
declared_only()
a * 0
%quit
std::cout << "after quit" << std::endl;
EOF
"$REPL" <script.cpp >out.txt 2>err.txt
status=$?
cat out.txt err.txt >all.txt
[[ $status == 0 ]] && pass "pipe: %quit exits with status 0" || fail "pipe: %quit exit status $status" all.txt
# A bare Array prints exactly as operator<< prints it.
if [[ $(sed -n 1p out.txt) == "$(sed -n 2p out.txt)" ]] && grep -Eq '0, +3, +6, +9' out.txt; then
  pass "pipe: a bare Array prints as operator<< does"
else
  fail "pipe: a bare Array prints as operator<< does" out.txt
fi
has err.txt "pipe: aj::Error is printed" '^aj::Error: aj::add: .*broadcast.*\(at <input>:4\)'
has err.txt "pipe: with the line typed" 'at line 4: auto b = a \+ ones\(\{5\}\);'
has out.txt "pipe: the session goes on with a intact" '1, +4, +7, +10'
has out.txt "pipe: an int prints plainly" '^42$'
has out.txt "pipe: a double prints as Python's repr" '^0\.30000000000000004$'
has out.txt "pipe: an integral double keeps its .0" '^6\.0$'
has out.txt "pipe: a string prints plainly" '^string$'
has out.txt "pipe: a Shape prints" '^\[4\]$'
has err.txt "pipe: a compile error names the line" "<input>:14:1: error: use of undeclared identifier 'undefined_name'"
has out.txt "pipe: a loop over lines ran" '2, +5, +8, +11'
has out.txt "pipe: %explain prints the plan" 'kernel'
has out.txt "pipe: %time prints the times" '^CPU time: .*Wall time: '
has out.txt "pipe: %time prints the value" '^array\(26'
# The first %time of a small expression: its kernel is new (HOME is fresh,
# so the disk cache is empty), and its compile is not counted but said.
has out.txt "pipe: the first %time says the JIT compile it did not count" \
  'Wall time: .* \(not counted: [0-9.]+ (ms|s|µs) compiling 1 new kernel\)$'
# first_time_at_most_5ms FILE NAME: the first %time in FILE took at most 5 ms
# of CPU time (what the evaluation itself cost; the wall time also counts the
# minutes a loaded machine, `ctest -j2`'s other entry, gives to others: 8.5
# ms of wall for 1.4 ms of CPU was seen there).
first_time_at_most_5ms() {
  local t
  t=$(grep -m1 '^CPU time: ' "$1" | sed -E 's/^CPU time: ([0-9.e+-]+) (ns|µs|ms|s),.*/\1 \2/')
  if awk -v t="$t" 'BEGIN { split(t, p, " "); f = p[2] == "s" ? 1e3 : p[2] == "ms" ? 1 : p[2] == "µs" ? 1e-3 : 1e-6;
                            exit !(p[1] != "" && p[1] * f <= 5) }'; then
    pass "$2 ($t)"
  else
    fail "$2 ($t)" "$1"
  fi
}
first_time_at_most_5ms out.txt "pipe: the first %time of a 4-element sum is at most 5 ms"
# As the session's first evaluation too (the host JIT is set up at startup).
printf '%%time sum(arange(6))\n' | "$REPL" >time_first.txt 2>&1
first_time_at_most_5ms time_first.txt "pipe: a first input %time sum(arange(6)) is at most 5 ms"
has out.txt "pipe: %profile prints the table of kernels by time" 'kernels and library steps by time'
has out.txt "pipe: %profile names the kernel, 1 call" '^ +[0-9.]+ +[0-9.]+ +1 .*mul\+sum'
has out.txt "pipe: %profile says where the trace went" '^wrote profile\.json \(Chrome trace'
has out.txt "pipe: %profile prints the value" '^array\(65'
if [[ -s profile.json ]] && python3 -c 'import json,sys; d=json.load(open("profile.json")); sys.exit(0 if any(e.get("cat")=="kernel" and e["name"].endswith("mul+sum") for e in d["traceEvents"]) else 1)' 2>/dev/null; then
  pass "pipe: %profile wrote profile.json with the kernel"
else
  fail "pipe: %profile wrote profile.json with the kernel" all.txt
fi
has out.txt "pipe: %stats prints aj::stats()" 'evals [0-9]+, kernels'
has out.txt "pipe: %dot reports the files" '^wrote a\.dot'
[[ -s a.dot ]] && grep -q digraph a.dot && pass "pipe: %dot wrote a.dot" || fail "pipe: %dot wrote a.dot" all.txt
if command -v dot >/dev/null; then
  [[ -s a.svg && -s a.png ]] && pass "pipe: %dot rendered a.svg and a.png" || fail "pipe: %dot rendered a.svg and a.png" all.txt
else
  echo "skip pipe: %dot rendering (Graphviz's dot is not installed)"
fi
has out.txt "pipe: %help lists the commands" '%explain EXPR'
has err.txt "pipe: an unknown command is reported" 'unknown command %nonsense'
has out.txt "pipe: a lambda in a statement runs" '^105$'
has err.txt "pipe: a symbol never defined is reported" 'Symbols not found.*declared_only'
has out.txt "pipe: and the session goes on" '0, +0, +0, +0'
hasnt out.txt "pipe: nothing runs after %quit" 'after quit'

printf 'auto x = ones({2});\nx + 1\n' | "$REPL" >eof.txt 2>&1
status=$?
[[ $status == 0 ]] && pass "pipe: end of input exits with status 0" || fail "pipe: end of input exit status $status" eof.txt
has eof.txt "pipe: output before end of input" '2\., +2\.'
# The precompiled prelude loads, and parsing the prelude instead gives the same session.
"$REPL" --verbose </dev/null >pch.txt 2>&1
has pch.txt "pipe: the precompiled prelude loads" 'prelude precompiled'
"$REPL" --no-pch --verbose <script.cpp >nopch.txt 2>nopch_err.txt
has nopch_err.txt "pipe: --no-pch parses the prelude" 'prelude parsed'
# (times differ: %time's line, %profile's table, %stats' counters)
notimes='time:|^evals|^profile: |^  kernels [0-9]|^top [0-9]+ of|^ +[0-9.]+ +[0-9.]+ +[0-9]+ '
if diff <(grep -Ev "$notimes" out.txt) <(grep -Ev "$notimes" nopch.txt) >diff.txt; then
  pass "pipe: --no-pch prints the same"
else
  fail "pipe: --no-pch prints the same" diff.txt
fi
printf 'throw 1;\n' | "$REPL" --fail-on-error >fail.txt 2>&1
status=$?
[[ $status == 1 ]] && pass "pipe: --fail-on-error exits with status 1" || fail "pipe: --fail-on-error status $status" fail.txt
has fail.txt "pipe: a non-std exception is reported" '^exception: int'

# --- compiled functions and lambdas held in variables --------------------------------------
# A variable of a lambda's type is one variable for every later input (it
# was copied into each one, made again: counts read 0, and `auto r = g(a);`
# called a g not yet made, SIGSEGV).
cat >compiled.cpp <<'EOF'
auto g = aj::compile([](const Array& v) { return v * 2 + 1; });
auto x = arange(3);
auto r = g(x);
r
auto x10 = x * 10;
x10
auto r2 = g(x10);
r2
Array r3;
r3 = g(x);
std::cout << "traces " << g.counts().traces << " replays " << g.counts().replays << std::endl;
auto h = [k = 0]() mutable { return ++k; };
h();
std::cout << "h " << h() << std::endl;
auto g2 = g;
auto r4 = g2(x);
std::cout << "after a copy: replays " << g.counts().replays << std::endl;
EOF
"$REPL" --fail-on-error <compiled.cpp >compiled.txt 2>&1
status=$?
[[ $status == 0 ]] && pass "compiled: auto r = g(a) runs (status 0)" || fail "compiled: status $status" compiled.txt
has compiled.txt "compiled: auto r = g(a) computes" '^array\(\[1, +3, +5\]'
has compiled.txt "compiled: a second call computes" '^array\(\[ *1, +21, +41\]'
has compiled.txt "compiled: counts() counts the session's calls" '^traces 1 replays 2$'
has compiled.txt "compiled: a lambda with state keeps it" '^h 2$'
has compiled.txt "compiled: a copy shares the function (std::shared_ptr copies link)" '^after a copy: replays 3$'

# --- functions with derivatives of their own and host callbacks, typed in a session ----------
# (clang-repl compiles with clang, which checks what gcc lets pass: a
# custom_vjp's bwd once failed to compile there.)
cat >custom.cpp <<'EOF'
auto sp = custom_vjp([](const Array& x) { return log1p(exp(x)); }, [](const Array& x) { return std::pair{log1p(exp(x)), std::vector<Array>{x}}; }, [](const std::vector<Array>& r, const Array& g) { return g * sigmoid(r[0]); });
auto xs = from_vector<double>({-1, 0, 800});
grad([&](const Array& a) { return sum(sp(a)); })(xs)
auto ck = checkpoint([](const Array& a) { return tanh(a) * 2.0; });
grad([&](const Array& a) { return sum(ck(a)); })(from_vector<double>({0}))
HostCallback dbl([](const std::vector<HostBuffer>& in, const std::vector<HostBuffer>& out) { for (std::int64_t i = 0; i < in[0].numel(); ++i) out[0].as<double>()[i] = 2 * in[0].at<double>(i); });
dbl({{xs.shape(), DType::f64}}, {xs})[0]
EOF
"$REPL" --fail-on-error <custom.cpp >custom.txt 2>&1
status=$?
[[ $status == 0 ]] && pass "custom: custom_vjp, checkpoint and HostCallback compile and run (status 0)" ||
  fail "custom: status $status" custom.txt
has custom.txt "custom: custom_vjp's rule gives the gradient (sigmoid, 1 at 800)" '^array\(\[0\.26894142, 0\.5 +, 1\. +\]'
has custom.txt "custom: checkpoint's gradient (2 at 0)" '^array\(\[2\.\]'
has custom.txt "custom: a host callback's value" '^array\(\[ *-2\., +0\., +1600\.\]'

# --- statements that go on after a block: else, catch, do's while ----------------------------
# An `if` block is not cut from its `else`, typed on the same line or the
# next; a line that does not continue it runs it first (so does a blank line).
cat >blocks.cpp <<'EOF'
int k = 3;
if (k > 2) { std::cout << "big" << std::endl; } else { std::cout << "small" << std::endl; }
if (k > 5) {
  std::cout << "huge" << std::endl;
}
// a comment between the block and its else
else {
  std::cout << "not huge" << std::endl;
}
if (k > 5) { std::cout << "x" << std::endl; }
else if (k > 1) { std::cout << "middle" << std::endl; }
else { std::cout << "y" << std::endl; }
if (k == 3) { std::cout << "no else" << std::endl; }
std::cout << "next statement" << std::endl;
if (k == 3) std::cout << "plain if" << std::endl;

std::cout << "after a blank line" << std::endl;
try { auto bad = arange(3) + ones({4}); } catch (const aj::Error& e) { std::cout << "caught aj::Error" << std::endl; }
try {
  throw std::runtime_error("boom");
}
catch (const aj::Error&) { std::cout << "wrong handler" << std::endl; }
catch (const std::exception& e) { std::cout << "caught " << e.what() << std::endl; }
do {
  ++k;
}
while (k < 10);
k
if (k == 10)
{
  k = 11;
}
k
EOF
"$REPL" --fail-on-error <blocks.cpp >blocks.txt 2>&1
status=$?
[[ $status == 0 ]] && pass "blocks: every input compiles (status 0)" || fail "blocks: status $status" blocks.txt
has blocks.txt "blocks: if {...} else {...} on one line" '^big$'
has blocks.txt "blocks: else on a line after the block (a comment between)" '^not huge$'
has blocks.txt "blocks: else if ... else over lines" '^middle$'
hasnt blocks.txt "blocks: no branch runs twice or wrongly" '^(small|huge|x|y|wrong handler)$'
if tr '\n' '|' <blocks.txt | grep -q 'no else|next statement|plain if|after a blank line|'; then
  pass "blocks: an if without else runs before the next line's statement"
else
  fail "blocks: an if without else runs before the next line's statement" blocks.txt
fi
has blocks.txt "blocks: try {...} catch on one line" '^caught aj::Error$'
has blocks.txt "blocks: catch clauses on the lines after the block" '^caught boom$'
has blocks.txt "blocks: do {...} while over lines" '^10$'
has blocks.txt "blocks: if (c) then its block on the next line" '^11$'

# --- Ctrl-C (SIGINT) interrupts a running evaluation -----------------------------------------
# y's kernel has 1e11 points (minutes); SIGINT comes once it runs: the
# evaluation stops between the kernel's blocks with aj::Error "interrupted",
# that input is undone, and the session goes on with its arrays intact.
cat >interrupt.cpp <<'EOF'
auto xr = arange(1000000).astype(DType::f32).reshape({1000000, 1});
auto yc = arange(100000).astype(DType::f32).reshape({1, 100000});
auto keep = arange(4) * 3;
keep
auto y = sum(sin(xr * yc), 1);
std::cout << "long evaluation starts" << std::endl; y.eval();
std::cout << "the session goes on" << std::endl;
keep + 1
sum(xr.reshape({-1}) * 0 + 1)
Array acc = zeros({8});
std::cout << "many evaluations start" << std::endl; for (long i = 0; i < 2000000000L; ++i) { acc = acc + 1; acc.eval(); }
acc.shape()
EOF
# wait_line FILE ERE: until FILE has a match (60 s at most).
wait_line() {
  local deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)); do grep -Eq -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
"$REPL" <interrupt.cpp >intr.txt 2>&1 &
repl_pid=$!
t_start=$SECONDS
wait_line intr.txt 'long evaluation starts' && sleep 1 && kill -INT $repl_pid
wait_line intr.txt 'many evaluations start' && sleep 1 && kill -INT $repl_pid
# Not interrupted, the two would run for hours: ended, it was the interrupts.
deadline=$((SECONDS + 120))
while kill -0 $repl_pid 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
if kill -0 $repl_pid 2>/dev/null; then
  kill -KILL $repl_pid
  fail "interrupt: SIGINT ends both evaluations (still running after $((SECONDS - t_start)) s)" intr.txt
else
  wait $repl_pid
  status=$?
  [[ $status == 0 ]] && pass "interrupt: the session ends normally after two interrupts" ||
    fail "interrupt: exit status $status" intr.txt
fi
if [[ $(grep -c '^aj::Error: aj: interrupted' intr.txt) == 2 ]]; then
  pass "interrupt: a long kernel and a loop of evaluations are each interrupted"
else
  fail "interrupt: a long kernel and a loop of evaluations are each interrupted" intr.txt
fi
has intr.txt "interrupt: the error names the input" 'at line 6: std::cout << "long evaluation starts"'
has intr.txt "interrupt: the session goes on" '^the session goes on$'
has intr.txt "interrupt: earlier arrays are intact" '^array\(\[ *1, +4, +7, +10\]'
has intr.txt "interrupt: the interrupted kernel's inputs are intact" '^array\(1000000\., dtype=f32'
has intr.txt "interrupt: the input after the loop runs" '^\[8\]$'

# --- 2. a session in a terminal ---------------------------------------------------------------
if ! command -v tmux >/dev/null; then
  echo "SKIP terminal tests: tmux is not installed"
  ((failed)) && exit 1 || exit 0
fi
pane() { tmux -L "$socket" capture-pane -p -J -S -500 -t repl 2>/dev/null; }
# wait_for ERE [SECONDS]: until the pane shows a match (startup on a busy machine is slow).
wait_for() {
  local deadline=$((SECONDS + ${2:-90}))
  while ((SECONDS < deadline)); do
    pane | grep -Eq -- "$1" && return 0
    sleep 0.2
  done
  return 1
}
# type_line TEXT: the keys, then Enter. (A ';' ending an argument would end
# tmux's command: a space follows it.)
type_line() {
  local text=$1
  [[ $text == *\; ]] && text+=" "
  tmux -L "$socket" send-keys -t repl -l -- "$text" && tmux -L "$socket" send-keys -t repl Enter
}
expect() {  # expect NAME ERE
  if wait_for "$2"; then pass "tty: $1"; else pane >pane.txt; fail "tty: $1 (no /$2/)" pane.txt; fi
}
start() {  # a fresh session; the exit status lands in $work/status
  rm -f status
  tmux -L "$socket" kill-server 2>/dev/null
  socket=${socket%-*}-$((${socket##*-} + 1))
  tmux -L "$socket" -f /dev/null new-session -d -s repl -x 200 -y 50 \
    "cd '$work' && '$REPL'; echo \$? >'$work/status'; sleep 600"
}
exit_status() {  # waits for the session's exit status
  local deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)) && [[ ! -s status ]]; do sleep 0.2; done
  cat status 2>/dev/null
}

start
expect "a banner and a prompt" '^arrayjit .* REPL'
type_line 'auto a = arange(4) * 3;'
type_line 'a'
expect "a bare Array prints" '0, +3, +6, +9'
type_line 'auto b = a + ones({5});'
expect "aj::Error with the line typed" 'at line 3: auto b = a \+ ones'
type_line 'a + 1'
expect "the session goes on with a intact" '1, +4, +7, +10'
type_line 'int n = 1;'
type_line 'n = n + 1'
expect "an assignment prints its value" '^2$'
tmux -L "$socket" send-keys -t repl Up Enter  # history: n = n + 1 again
expect "Up recalls the last line" '^3$'
tmux -L "$socket" send-keys -t repl -l 'n * 77'
tmux -L "$socket" send-keys -t repl BSpace Enter  # line editing: n * 7
expect "Backspace edits the line" '^21$'
type_line 'for (int i = 0; i < 2; ++i) {'
expect "an open bracket asks for more" '^\.\.> '
type_line '  n = n + 10; }'
type_line 'n'
expect "the loop ran" '^23$'
type_line 'if (n > 1000) { n = 1; }'
type_line 'else { n = 5; }'
type_line 'n'
expect "else typed on the line after an if block" '^5$'
# Each key goes in once the REPL reads the terminal: keys typed before its
# prompt is drawn were dropped or reordered with the Ctrl-C when the machine
# was busy (a ctest -j2 run beside aj_tests).
prompt_ready() { [[ $(pane | sed '/^[[:space:]]*$/d' | tail -n 1) =~ ^aj\>[[:space:]]*$ ]]; }
wait_prompt() {
  local deadline=$((SECONDS + 90))
  while ((SECONDS < deadline)); do prompt_ready && return 0; sleep 0.2; done
  return 1
}
wait_prompt
tmux -L "$socket" send-keys -t repl -l 'this is not C++'
wait_for 'aj> this is not C\+\+' 30
tmux -L "$socket" send-keys -t repl C-c  # drops the line, keeps the session
wait_prompt
type_line '6 * 7'
expect "Ctrl-C drops the line typed" '^42$'
if pane | grep -q 'not C++.*error\|undeclared identifier .this'; then
  pane >pane.txt; fail "tty: the dropped line did not run" pane.txt
else
  pass "tty: the dropped line did not run"
fi
# Ctrl-C while an evaluation runs stops it; the session goes on.
type_line 'auto big = sum(sin(arange(1000000).astype(DType::f32).reshape({1000000, 1}) * arange(100000).astype(DType::f32).reshape({1, 100000})), 1);'
wait_prompt
type_line 'std::cout << "evaluating" << std::endl; big.eval();'
wait_for '^evaluating$' 60 && sleep 1
tmux -L "$socket" send-keys -t repl C-c
expect "Ctrl-C interrupts a running evaluation" '^aj::Error: aj: interrupted'
wait_prompt
type_line 'a + 2'
expect "and the session goes on" '2, +5, +8, +11'
type_line '%explain a * 2'
expect "%explain" 'kernel'
type_line '%time sum(a)'
expect "%time" 'Wall time: '
type_line '%stats'
expect "%stats" 'evals [0-9]+, kernels'
type_line '%dot a'
expect "%dot" 'wrote a\.dot'
type_line '%help'
expect "%help" '%quit +leave'
type_line '%quit'
[[ $(exit_status) == 0 ]] && pass "tty: %quit exits with status 0" || { pane >pane.txt; fail "tty: %quit exit status '$(cat status 2>/dev/null)'" pane.txt; }
[[ -s .arrayjit_repl_history ]] && grep -q '%quit' .arrayjit_repl_history &&
  pass "tty: the history is saved" || fail "tty: the history is saved"

start
expect "a second session starts" '^aj> '
tmux -L "$socket" send-keys -t repl Up
expect "the saved history is read" '^aj> %quit'
tmux -L "$socket" send-keys -t repl C-u C-d
[[ $(exit_status) == 0 ]] && pass "tty: Ctrl-D exits with status 0" || { pane >pane.txt; fail "tty: Ctrl-D exit status '$(cat status 2>/dev/null)'" pane.txt; }

((failed)) && exit 1
exit 0
