package cli

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// waitSpec describes one visible wait.
type waitSpec struct {
	Key     quota.Key
	Until   time.Time
	What    string // "Quota wait" or "Secondary limit wait"
	Command string // redacted command line, for status
}

// visibleWait blocks until spec.Until on env.Clock. It registers the wait in
// the store so status lists it, shows it on stderr (a live countdown on a
// terminal, one line otherwise), and ends at once on SIGINT or SIGTERM with
// exit code 130 or 143. It returns how long it waited.
func visibleWait(ctx context.Context, env *Env, st store.Store, spec waitSpec) (time.Duration, error) {
	start := env.Clock.Now()
	stage := fmt.Sprintf("%s until %s", spec.What, humanTime(spec.Until))
	id, err := st.RegisterWaiter(ctx, store.Waiter{
		Hostname: env.Hostname, PID: os.Getpid(), Command: spec.Command, Key: spec.Key,
		Stage: stage, WaitUntil: spec.Until, StartedAt: start,
	})
	if err != nil {
		return 0, internalErr("write store: %v", err)
	}
	defer func() {
		// The wait is over either way; a row left behind would list it in
		// status while the command runs on, so say so.
		if err := st.RemoveWaiter(context.WithoutCancel(ctx), id); err != nil {
			fmt.Fprintf(env.Stderr, "layover: remove the wait from the store: %v\n", err)
		}
	}()

	label := fmt.Sprintf("%s (%s %s)", stage, providerName(spec.Key.Host), shown(spec.Key.Resource))
	if !env.Terminal {
		fmt.Fprintf(env.Stderr, "layover: %s\n", label)
	}
	for {
		now := env.Clock.Now()
		left := spec.Until.Sub(now)
		if left <= 0 {
			if env.Terminal {
				fmt.Fprintf(env.Stderr, "\r\033[Klayover: %s: done\n", label)
			}
			return now.Sub(start), nil
		}
		tick := left
		if env.Terminal {
			fmt.Fprintf(env.Stderr, "\r\033[Klayover: %s, %s left", label, humanDuration(left))
			tick = min(left, time.Second)
		}
		select {
		case <-env.Clock.After(tick):
		case sig := <-env.Signals:
			if env.Terminal {
				fmt.Fprintln(env.Stderr)
			}
			fmt.Fprintf(env.Stderr, "layover: %s ended by %v\n", spec.What, sig)
			if sig == syscall.SIGTERM {
				return env.Clock.Now().Sub(start), exitCode(ExitSIGTERM)
			}
			return env.Clock.Now().Sub(start), exitCode(ExitSIGINT)
		case <-ctx.Done():
			return env.Clock.Now().Sub(start), exitCode(ExitSIGTERM)
		}
	}
}

// providerName is how a quota's host is named to people.
func providerName(host string) string { return providerLabel(host) }

// providerLabel names a provider, or a quota host, for people, on one safe
// line (shown).
func providerLabel(hostOrProvider string) string {
	switch hostOrProvider {
	case "api.github.com", "github.com", "github", "":
		return "GitHub"
	case "claude-code":
		return "Claude Code"
	case "codex":
		return "Codex"
	case "copilot":
		return "Copilot CLI"
	case "kimi":
		return "Kimi"
	case "gemini-cli":
		return "Gemini CLI"
	}
	return "GitHub (" + shown(hostOrProvider) + ")"
}
