// Package agentcli turns what AI agent CLIs print when they fail into
// layover's outcomes (docs/provider-signals.md §5): Claude Code
// ([ClassifyClaudeCode]), Codex ([ClassifyCodex]), GitHub Copilot CLI
// ([ClassifyCopilot]), Kimi Code ([ClassifyKimi]), Gemini CLI
// ([ClassifyGeminiCLI]) and Antigravity CLI ([ClassifyAntigravity]). provider/registry picks a classifier by provider
// name, and [ClassifyAuto] asks all of them and gh's (github.ClassifyCLI)
// when the program is not known.
//
// [Agents] describes how each agent CLI continues a session (its resume
// command, with [ResumeInstruction] as the prompt, and its credentials
// check), and [SessionID] reads the session id a run printed
// (docs/agents.md).
//
// # Rules every classifier keeps
//
//   - Only a failed command is classified: exit 0 is ok whatever it
//     printed, and a retry notice (Claude Code's system/api_retry events,
//     Codex's "Reconnecting…", Gemini CLI's "Retrying with backoff") is
//     never a limit.
//   - Only evidence of a limit makes quota or secondary: a field of the
//     CLI's structured output or a text it prints. An exit code alone
//     never does (Kimi's 75 alone is transient; Gemini CLI's 173 alone is
//     transient).
//   - Structured evidence beats text (a Claude rate_limit_event beats the
//     usage-limit message, whose format changes between versions); a text
//     still supplies a reset the structured evidence lacks.
//   - A reset is taken only from the output: epoch seconds, a stated wait,
//     or a printed local time. One that does not parse is unknown (ResetAt
//     zero): nothing here invents a reset. Claude Code's texts are read only
//     where errors are printed (an errored result, an errored assistant
//     message, stderr, lines that are not stream events), never in the
//     conversation, which may quote anything.
//   - At most the last 64 KiB of each stream is read.
//
// # Local times
//
// Claude Code, Codex and Gemini CLI print resets as local times: with an
// IANA zone ("resets 4:50am (Europe/Rome)"), with an en-US abbreviation
// ("Access resets at 3:45 PM PDT"), or without a zone ("resets 1am",
// Codex's "try again at 3:28 PM"), which is read in the loc argument
// (nil: now's location). A time of day already past is its next
// occurrence, tomorrow; a date without a year is the next such date. A
// time up to [PastGrace] (5 minutes) past is still today's: output is
// classified moments after it was printed, and a reset that has just
// passed must not become a 24-hour wait. Zones come from time.LoadLocation;
// the package embeds Go's zone database (time/tzdata) as its fallback, so
// machines without one read them too. A zone that is not known leaves the
// reset unknown.
//
// # Resources
//
// Claude Code's limits are named by rateLimitType ("five_hour",
// "seven_day", "seven_day_opus", …; "5-hour"/"session" texts are
// five_hour, "weekly" seven_day); Copilot's premium quota is
// "premium-requests", its rate limits "requests" or "tokens"; Gemini CLI's
// quota is the model it names; Kimi's are the openai package's
// ("requests", "tokens-per-day"); a balance, plan or membership is
// "billing". Where the output names no window the Resource is "" and the
// caller chooses the key.
package agentcli
