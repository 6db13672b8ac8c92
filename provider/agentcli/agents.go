package agentcli

import (
	"slices"
	"strings"
)

// Agent is an agent CLI layover knows how to continue (docs/agents.md).
//
// What each field says of the real CLI, and which of it is confirmed
// from the CLI's own documentation or its issue tracker, is listed in
// docs/agents.md; the doc comment of each entry of Agents says the same
// in short.
type Agent struct {
	// Name is how `--agent` names it: "claude", "codex", "copilot",
	// "kimi", "gemini" or "antigravity".
	Name string
	// Provider is the name Classify and the registry take for its
	// outputs (ProviderClaudeCode, ProviderCodex, …).
	Provider string
	// Program is the executable's usual name.
	Program string
	// ResumeCmd is a shell template holding {session_id}: how this CLI
	// continues a session, non-interactively, with ResumeInstruction as
	// its prompt. The caller replaces {session_id} with the session id,
	// shell-quoted; the template quotes everything else itself. It adds no
	// permission flags: a run that needed some (Claude Code's
	// --permission-mode, Copilot's --allow-all-tools) needs a
	// `--resume-cmd` of the user's own.
	ResumeCmd string
	// StartCmd is a shell template holding {prompt}: how this CLI runs a
	// brief non-interactively, in a form that reports the new session so
	// a later ResumeCmd can continue it. The caller replaces {prompt}
	// with the brief, shell-quoted. Like ResumeCmd it adds no permission
	// flags.
	StartCmd string
	// AuthCheck is the CLI's own cheap credentials check, as argv: exit 0
	// means logged in. nil when the CLI has none.
	AuthCheck []string
}

// ResumeInstruction is the prompt a built-in resume sends: short, so that
// the continued conversation, not a second copy of the brief, carries the
// task. It holds no single quote, so ResumeCmd can quote it with them.
const ResumeInstruction = "Continue the interrupted task from where it stopped; the usage limit has reset."

// ShellQuote returns s as one shell word, for the {prompt} of StartCmd
// and the {session_id} of ResumeCmd.
func ShellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// ProviderAntigravity is the Outcome.Provider of Antigravity CLI (agy).
const ProviderAntigravity = "antigravity"

// quoted is ResumeInstruction as one shell word.
const quoted = "'" + ResumeInstruction + "'"

// agents are the six, in Agents' order.
var agents = []Agent{
	// Claude Code: `claude -p --resume <session-id>` continues a session
	// in print mode (confirmed: anthropics/claude-code#1967, #3976,
	// #43586: with --print the id must be a UUID); stream-json needs
	// --verbose and prints session_id on every event, so the resumed
	// run's session is captured again. `claude auth status` (since
	// 2.1.41) prints {"loggedIn":…} and exits 1 when logged out
	// (confirmed from its users' reports; the exit code of older builds
	// without the subcommand is not a login state).
	{
		Name: "claude", Provider: ProviderClaudeCode, Program: "claude",
		StartCmd:  "claude -p {prompt} --output-format stream-json --verbose",
		ResumeCmd: "claude -p --resume {session_id} --output-format stream-json --verbose " + quoted,
		AuthCheck: []string{"claude", "auth", "status"},
	},
	// Codex: `codex exec resume <SESSION_ID> [PROMPT]`, which takes
	// --json after the id (confirmed: developers.openai.com/codex/
	// noninteractive, openai/codex#4583, #40149); --json's first event,
	// thread.started, carries the thread id a resume takes (confirmed).
	// `codex login status` exits 0 logged in, 1 not (confirmed).
	{
		Name: "codex", Provider: ProviderCodex, Program: "codex",
		StartCmd:  "codex exec --json {prompt}",
		ResumeCmd: "codex exec resume {session_id} --json " + quoted,
		AuthCheck: []string{"codex", "login", "status"},
	},
	// Copilot CLI: `copilot -p PROMPT --resume <session-id>` (confirmed:
	// github/copilot-cli#807, #1342, which also shows the
	// "--resume=<id>" hint it prints). No status command is documented:
	// AuthCheck is nil.
	{
		Name: "copilot", Provider: ProviderCopilot, Program: "copilot",
		StartCmd:  "copilot -p {prompt}",
		ResumeCmd: "copilot -p " + quoted + " --resume {session_id}",
	},
	// Kimi Code: `kimi --print -S <id> -p PROMPT` (-S/--session, confirmed
	// in kimi-cli's command reference and MoonshotAI/kimi-cli#355; see
	// docs/agents.md); it prints "To resume this session: kimi -r
	// <id>" (reported by integrators; its stream unconfirmed). Kimi has
	// `kimi login` but no status command: AuthCheck is nil.
	{
		Name: "kimi", Provider: ProviderKimi, Program: "kimi",
		StartCmd:  "kimi --print -p {prompt}",
		ResumeCmd: "kimi --print -S {session_id} -p " + quoted,
	},
	// Gemini CLI: `gemini --resume <uuid|index|latest>` (confirmed:
	// geminicli.com/docs/cli/session-management), headless with -p;
	// stream-json's init event carries session_id (confirmed: the
	// headless reference), as does the json output's session_id (newer
	// releases). No status command: AuthCheck is nil.
	{
		Name: "gemini", Provider: ProviderGeminiCLI, Program: "gemini",
		StartCmd:  "gemini -p {prompt} --output-format stream-json",
		ResumeCmd: "gemini --resume {session_id} -p " + quoted + " --output-format stream-json",
	},
	// Antigravity CLI (agy): `agy --conversation <id> -p PROMPT`
	// (confirmed: google-antigravity/antigravity-cli#278, #747, and
	// integrators' fixes); --output-format json|stream-json since 1.1.8
	// (confirmed: #747), whose events carry conversation_id (reported by
	// an integrator; field names unconfirmed by Google). Plain --print
	// prints no id (#7). No status command is documented: AuthCheck is
	// nil.
	{
		Name: "antigravity", Provider: ProviderAntigravity, Program: "agy",
		StartCmd:  "agy -p {prompt} --output-format stream-json",
		ResumeCmd: "agy --conversation {session_id} -p " + quoted + " --output-format stream-json",
	},
}

// Agents returns the six agent CLIs layover knows how to continue, in
// the order Claude Code, Codex, Copilot CLI, Kimi, Gemini CLI,
// Antigravity. The slice and its AuthCheck slices are the caller's.
func Agents() []Agent {
	out := slices.Clone(agents)
	for i := range out {
		out[i].AuthCheck = slices.Clone(out[i].AuthCheck)
	}
	return out
}

// AgentNamed returns the agent of a name: its Name, its Provider
// ("claude-code", "gemini-cli") or its Program ("agy").
func AgentNamed(name string) (Agent, bool) {
	for _, a := range agents {
		if name == a.Name || name == a.Provider || name == a.Program {
			a.AuthCheck = slices.Clone(a.AuthCheck)
			return a, true
		}
	}
	return Agent{}, false
}
