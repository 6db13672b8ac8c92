package fake

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// AgentVersion is what every fake agent CLI reports for --version.
const AgentVersion = "0.0.0-layover-fake"

// The agent CLIs Agent imitates, by program name.
const (
	AgentClaude  = "claude"
	AgentCodex   = "codex"
	AgentCopilot = "copilot"
	AgentKimi    = "kimi"
	AgentGemini  = "gemini"
	// AgentAntigravity is Antigravity CLI, whose program is agy.
	AgentAntigravity = "antigravity"
)

// AgentNames are the CLIs Agent imitates.
var AgentNames = []string{AgentClaude, AgentCodex, AgentCopilot, AgentKimi, AgentGemini, AgentAntigravity}

// Agent modes: what one invocation does, one per line of FAKE_AGENT_SCRIPT.
const (
	// ModeOK succeeds: the CLI's answer, exit 0.
	ModeOK = "ok"
	// ModeLimit hits the CLI's usage limit in its structured form where it
	// has one, with the reset given as epoch seconds ("limit 1785945600";
	// without one, an hour from the fake's now).
	ModeLimit = "limit"
	// ModeLimitText hits the usage limit as the CLI's text alone.
	ModeLimitText = "limit-text"
	// ModeSecondary hits a short throttle ("secondary 6": a 6-second wait
	// where the CLI states one).
	ModeSecondary = "secondary"
	// ModeAuth fails for credentials.
	ModeAuth = "auth"
	// ModeOverloaded fails because the service is overloaded.
	ModeOverloaded = "overloaded"
	// ModeFail fails for a reason no wait fixes.
	ModeFail = "fail"
)

// AgentModes are the modes a script line may name.
var AgentModes = []string{ModeOK, ModeLimit, ModeLimitText, ModeSecondary, ModeAuth, ModeOverloaded, ModeFail}

// agentRun is one invocation of a fake agent CLI.
type agentRun struct {
	name   string
	args   []string
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
	now    time.Time
	zone   *time.Location
	mode   string
	// arg is the mode's argument: a reset in epoch seconds, a wait in
	// seconds; 0 when not given.
	arg int64
	// index is the invocation's number in the script, from 0.
	index int
	// apiText is the API's error as the CLI prints it, when FAKE_AGENT_API's
	// call was answered with one (callAPI).
	apiText string
}

// Agent runs a fake AI agent CLI with args (without the program name) and
// returns its exit code. name is the program it imitates: claude, codex,
// copilot, kimi, gemini or agy (Antigravity; a path or a ".exe" suffix is
// ignored; the FAKE_AGENT environment variable, when set, wins). Each prints, for the
// mode its script gives, what that CLI prints in that case, byte for byte
// where layover's classifiers read it, with its exit code:
//
//	claude -p [--output-format text|json|stream-json] [--verbose] [--resume ID | --session-id ID] PROMPT
//	claude auth status
//	codex exec [--json] [resume ID] PROMPT
//	codex login status
//	copilot -p PROMPT [--resume[=]ID] [--output-format text|json]
//	kimi --print [--output-format text|stream-json] [-S ID] [-p|-c PROMPT]
//	gemini -p PROMPT [-o|--output-format text|json|stream-json] [-m MODEL] [-r|--resume ID]
//	agy -p PROMPT [--conversation ID] [--output-format text|json|stream-json]
//
// Each accepts its CLI's resume form (agentcli.Agents' ResumeCmd) and
// reports its session in that CLI's format: Claude Code's and Gemini CLI's
// session_id, Codex's thread id (the "session id:" header without --json),
// Copilot's sessionId (the "--resume=" hint without JSON), Kimi's "To
// resume this session" hint, Antigravity's conversation_id. "--version"
// prints AgentVersion and reads no script; the credentials checks
// (`claude auth status`, `codex login status`) read none either.
//
// Environment (read through getenv; nil means os.Getenv):
//   - FAKE_AGENT: the CLI to imitate, overriding name (claude, codex,
//     copilot, kimi, gemini, antigravity; claude-code, gemini-cli and agy
//     too).
//   - FAKE_AGENT_SCRIPT: a file with one mode per invocation, consumed in
//     order: "ok", "limit [EPOCH]", "limit-text [EPOCH]", "secondary
//     [SECONDS]", "auth", "overloaded", "fail". Blank lines and lines
//     starting with "#" are skipped; after the last line the last line
//     repeats. Without a script every invocation is "ok".
//   - FAKE_AGENT_STATE: the file counting the invocations so far (default:
//     the script's path + ".state"); invocations running at once take
//     turns on it.
//   - FAKE_AGENT_LOG: a file to which every invocation appends one line,
//     its arguments joined by spaces (an argument with spaces or quotes,
//     or an empty one, is quoted as Go quotes it).
//   - FAKE_AGENT_NOW: the fake's clock, in epoch seconds (default: the
//     time now).
//   - FAKE_AGENT_TZ: the IANA zone in which the fake prints local times,
//     as the real CLIs print them in the machine's zone (default UTC).
//   - FAKE_AGENT_SESSION: the session (or thread) id to report when
//     --resume does not name one (default: one derived from the
//     invocation).
//   - FAKE_AGENT_LOGIN: a path; when set, the CLI is logged in only while
//     it exists. Logged out, every invocation fails with the CLI's auth
//     error (as the "auth" mode prints it) without taking a script line,
//     and the credentials check exits 1; logged in (or unset), the check
//     exits 0.
//   - FAKE_AGENT_API: when set, Claude Code and Codex call the API their
//     base URL variable names (ANTHROPIC_BASE_URL, OPENAI_BASE_URL) once,
//     and its answer decides the mode in place of the script line (see
//     callAPI).
//
// What each CLI prints in each mode, and where the fake departs from the
// real CLI, is documented on its printer: claudeRun, codexRun, copilotRun,
// kimiRun, geminiRun and antigravity. Common departures: no real work is done, the
// answer to every prompt is "done", timings and costs are fixed, and
// nothing is wrapped to the terminal's width.
func Agent(name string, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if getenv == nil {
		getenv = os.Getenv
	}
	cli := agentName(name)
	if v := getenv("FAKE_AGENT"); v != "" {
		cli = agentName(v)
	}
	switch cli {
	case AgentClaude, AgentCodex, AgentCopilot, AgentKimi, AgentGemini, AgentAntigravity:
	default:
		fmt.Fprintf(stderr, "fake agent: unknown CLI %q (name the program claude, codex, copilot, kimi, gemini or agy, or set FAKE_AGENT)\n", name)
		return 2
	}
	if p := getenv("FAKE_AGENT_LOG"); p != "" {
		appendLine(p, logArgs(args))
	}
	for _, a := range args {
		if a == "--version" {
			fmt.Fprintf(stdout, "%s %s\n", cli, AgentVersion)
			return 0
		}
	}
	r := &agentRun{name: cli, args: args, getenv: getenv, stdout: stdout, stderr: stderr, now: time.Now(), zone: time.UTC}
	if v := getenv("FAKE_AGENT_NOW"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			fmt.Fprintf(stderr, "fake agent: FAKE_AGENT_NOW=%q is not epoch seconds\n", v)
			return 2
		}
		r.now = time.Unix(n, 0)
	}
	if v := getenv("FAKE_AGENT_TZ"); v != "" {
		z, err := time.LoadLocation(v)
		if err != nil {
			fmt.Fprintf(stderr, "fake agent: FAKE_AGENT_TZ=%q: %v\n", v, err)
			return 2
		}
		r.zone = z
	}
	loggedIn := true
	if p := getenv("FAKE_AGENT_LOGIN"); p != "" {
		_, err := os.Stat(p)
		loggedIn = err == nil
	}
	if r.isAuthCheck() {
		return r.authCheck(loggedIn)
	}
	if loggedIn {
		line, index, err := nextScriptLine(getenv)
		if err != nil {
			fmt.Fprintf(stderr, "fake agent: %v\n", err)
			return 2
		}
		r.index = index
		if err := r.parseMode(line); err != nil {
			fmt.Fprintf(stderr, "fake agent: %v\n", err)
			return 2
		}
		r.callAPI()
	} else {
		r.mode = ModeAuth
	}
	switch cli {
	case AgentClaude:
		return r.claude()
	case AgentCodex:
		return r.codex()
	case AgentCopilot:
		return r.copilot()
	case AgentKimi:
		return r.kimi()
	case AgentGemini:
		return r.gemini()
	default:
		return r.antigravity()
	}
}

// isAuthCheck reports whether the invocation is the CLI's credentials
// check: `claude auth status` or `codex login status`.
func (r *agentRun) isAuthCheck() bool {
	if len(r.args) < 2 || r.args[1] != "status" {
		return false
	}
	switch r.name {
	case AgentClaude:
		return r.args[0] == "auth"
	case AgentCodex:
		return r.args[0] == "login"
	}
	return false
}

// authCheck imitates the credentials check: Claude Code's `auth status`
// prints a JSON object whose loggedIn decides, and exits 1 when logged
// out; Codex's `login status` prints "Logged in using ChatGPT" or "Not
// logged in" (on stderr, where the fake assumes codex-rs writes it) and
// exits 1 when logged out.
func (r *agentRun) authCheck(loggedIn bool) int {
	code := 0
	if !loggedIn {
		code = 1
	}
	switch r.name {
	case AgentClaude:
		method := "claude.ai"
		if !loggedIn {
			method = "none"
		}
		fmt.Fprintln(r.stdout, ordered{{"loggedIn", loggedIn}, {"authMethod", method}, {"apiProvider", "firstParty"}}.line())
	default:
		if loggedIn {
			fmt.Fprintln(r.stderr, "Logged in using ChatGPT")
		} else {
			fmt.Fprintln(r.stderr, "Not logged in")
		}
	}
	return code
}

// agentName is the CLI a program name or FAKE_AGENT value names.
func agentName(name string) string {
	base := name
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	base = strings.TrimSuffix(strings.ToLower(base), ".exe")
	switch base {
	case "claude-code":
		return AgentClaude
	case "gemini-cli":
		return AgentGemini
	case "agy":
		return AgentAntigravity
	}
	return base
}

// logArgs joins args for FAKE_AGENT_LOG.
func logArgs(args []string) string {
	parts := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\") {
			a = strconv.Quote(a)
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}

// parseMode reads a script line: a mode and an optional number.
func (r *agentRun) parseMode(line string) error {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		r.mode = ModeOK
		return nil
	}
	r.mode = fields[0]
	known := false
	for _, m := range AgentModes {
		known = known || m == r.mode
	}
	if !known {
		return fmt.Errorf("unknown mode %q in FAKE_AGENT_SCRIPT (known: %s)", r.mode, strings.Join(AgentModes, ", "))
	}
	if len(fields) > 2 {
		return fmt.Errorf("script line %q: at most one argument", line)
	}
	if len(fields) == 2 {
		n, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil || n <= 0 {
			return fmt.Errorf("script line %q: %q is not a positive number", line, fields[1])
		}
		r.arg = n
	}
	return nil
}

// reset is the limit's reset: the mode's argument, else an hour from now.
func (r *agentRun) reset() time.Time {
	if r.arg > 0 {
		return time.Unix(r.arg, 0)
	}
	return r.now.Add(time.Hour).Truncate(time.Minute)
}

// wait is a throttle's wait in seconds: the mode's argument, else def.
func (r *agentRun) wait(def int64) int64 {
	if r.arg > 0 {
		return r.arg
	}
	return def
}

// sessionID is the session the run reports: resumed, FAKE_AGENT_SESSION,
// else one derived from the invocation, UUID-shaped.
func (r *agentRun) sessionID(resumed string) string {
	if resumed != "" {
		return resumed
	}
	if v := r.getenv("FAKE_AGENT_SESSION"); v != "" {
		return v
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s|%d|%d|%s", r.name, r.index, r.now.Unix(), strings.Join(r.args, "\x00"))))
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32]
}

// flagValue returns the value of a flag given as "--name V", "--name=V"
// or, for a one-letter alias, "-n V", and whether it was given.
func flagValue(args []string, names ...string) (string, bool) {
	for i, a := range args {
		for _, n := range names {
			if a == n && i+1 < len(args) {
				return args[i+1], true
			}
			if strings.HasPrefix(a, n+"=") {
				return a[len(n)+1:], true
			}
		}
	}
	return "", false
}

// hasFlag reports whether a boolean flag was given.
func hasFlag(args []string, names ...string) bool {
	for _, a := range args {
		for _, n := range names {
			if a == n {
				return true
			}
		}
	}
	return false
}

// nextScriptLine takes the next line of FAKE_AGENT_SCRIPT and returns it
// with its index; "ok" without a script.
func nextScriptLine(getenv func(string) string) (string, int, error) {
	script := getenv("FAKE_AGENT_SCRIPT")
	if script == "" {
		return ModeOK, 0, nil
	}
	data, err := os.ReadFile(script)
	if err != nil {
		return "", 0, fmt.Errorf("FAKE_AGENT_SCRIPT: %w", err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	state := getenv("FAKE_AGENT_STATE")
	if state == "" {
		state = script + ".state"
	}
	unlock, err := lockFile(state + ".lock")
	if err != nil {
		return "", 0, err
	}
	defer unlock()
	n := 0
	if b, err := os.ReadFile(state); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v >= 0 {
			n = v
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", 0, fmt.Errorf("FAKE_AGENT_STATE: %w", err)
	}
	if err := os.WriteFile(state, []byte(strconv.Itoa(n+1)+"\n"), 0o600); err != nil {
		return "", 0, fmt.Errorf("FAKE_AGENT_STATE: %w", err)
	}
	if len(lines) == 0 {
		return ModeOK, n, nil
	}
	return lines[min(n, len(lines)-1)], n, nil
}

// lockFile takes a lock by creating a directory, waiting up to 10 s for
// another invocation to release it, and returns its release.
func lockFile(path string) (func(), error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.Mkdir(path, 0o700)
		if err == nil {
			return func() { _ = os.Remove(path) }, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("FAKE_AGENT_STATE lock: %w", err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("FAKE_AGENT_STATE lock %s held for 10s (remove it if no fake agent runs)", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// writeLines prints lines to w, each ended by a newline.
func writeLines(w io.Writer, lines ...string) {
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// kv is one key and value of an ordered JSON object.
type kv struct {
	k string
	v any
}

// ordered is a JSON object whose keys keep their order, as the CLIs print
// them ("type" first).
type ordered []kv

// MarshalJSON renders the object with its keys in order.
func (o ordered) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, p := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(mustJSON(p.k))
		b.WriteByte(':')
		b.Write(mustJSON(p.v))
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// line renders an ordered object as one line of JSON.
func (o ordered) line() string { return string(mustJSON(o)) }
