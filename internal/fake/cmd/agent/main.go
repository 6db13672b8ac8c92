// Command agent is layover's fake AI agent CLI, for end-to-end tests and
// `layover demo`. One binary imitates Claude Code, Codex, Copilot CLI, Kimi
// Code, Gemini CLI and Antigravity CLI: it acts as the CLI its program name
// names (install or link it as claude, codex, copilot, kimi, gemini or
// agy), or as the one FAKE_AGENT names. What it prints is scripted by FAKE_AGENT_SCRIPT; see
// fake.Agent for the modes, the environment and where it differs from the
// real CLIs.
package main

import (
	"os"

	"github.com/layoverhq/layover/internal/fake"
)

func main() {
	os.Exit(fake.Agent(os.Args[0], os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
