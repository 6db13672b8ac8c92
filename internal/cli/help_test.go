package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// helpKeys are the names of every command Main and the command groups
// dispatch: "run", "flow", "flow run", "receipt validate".
func helpKeys() []string {
	var keys []string
	groups := commandGroups()
	for _, c := range commands() {
		keys = append(keys, c.name)
		for _, s := range groups[c.name] {
			keys = append(keys, c.name+" "+s)
		}
	}
	return keys
}

func mainOut(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), &Env{Stdout: &out, Stderr: &errb}, args)
	return code, out.String(), errb.String()
}

// Every command has a help entry with a summary, an example of itself and
// its exit codes, and its -h shows them: a new command cannot skip it.
func TestEveryCommandHasHelp(t *testing.T) {
	for _, key := range helpKeys() {
		e, ok := helpTable[key]
		if !ok || e.summary == "" || len(e.examples) == 0 || len(e.exits) == 0 {
			t.Errorf("%q: help entry %+v; want a summary, examples and exit codes", key, e)
			continue
		}
		for _, x := range e.examples {
			of := strings.HasPrefix(x, "layover "+key) || strings.Contains(x, "| layover "+key) || strings.Contains(x, "$(layover "+key)
			if !of && key != "version" {
				t.Errorf("%q: example %q is not of the command", key, x)
			}
		}
		code, out, errs := mainOut(t, append(strings.Fields(key), "-h")...)
		if code != 0 || errs != "" {
			t.Errorf("%s -h: exit %d, stderr %q", key, code, errs)
		}
		for _, want := range []string{e.summary, "Examples:\n  " + e.examples[0], "Exit codes:\n  " + e.exits[0]} {
			if !strings.Contains(out, want) {
				t.Errorf("%s -h lacks %q:\n%s", key, want, out)
			}
		}
		// layover help CMD is CMD -h.
		hcode, hout, _ := mainOut(t, append([]string{"help"}, strings.Fields(key)...)...)
		if hcode != 0 || hout != out {
			t.Errorf("help %s: exit %d and\n%s\nwant %s -h's exit 0 and\n%s", key, hcode, hout, key, out)
		}
	}
	for k := range helpTable {
		found := false
		for _, key := range helpKeys() {
			found = found || key == k
		}
		if !found {
			t.Errorf("help entry %q is of no command", k)
		}
	}
}

// The general help lists each command with its summary.
func TestGeneralHelpListsTheCommands(t *testing.T) {
	code, out, _ := mainOut(t, "help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, c := range commands() {
		if !strings.Contains(out, "  "+c.name+" ") || !strings.Contains(out, helpTable[c.name].summary) {
			t.Errorf("general help lacks %s and its summary:\n%s", c.name, out)
		}
	}
}

func TestHelpForNoCommandExits2(t *testing.T) {
	for _, topic := range [][]string{{"help", "nosuch"}, {"help", "flow", "nosuch"}, {"help", "run", "extra"}} {
		code, out, errs := mainOut(t, topic...)
		if code != 2 || out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "layover: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and one line", topic, code, out, errs)
		}
	}
}

// Every --store flag names the PostgreSQL form (but sim lanes', which
// picks the kind of the simulation's own temporary store).
func TestStoreHelpNamesPostgres(t *testing.T) {
	tree := buildCompletionTree(context.Background())
	n := 0
	for key, flags := range tree.flags {
		if key == "sim lanes" {
			continue
		}
		for _, f := range flags {
			if f.name == "--store" {
				n++
				if !strings.Contains(f.usage, "postgres://") {
					t.Errorf("%s --store: %q names no postgres://", key, f.usage)
				}
			}
		}
	}
	if n < 5 {
		t.Fatalf("%d commands have --store; the tree missed some", n)
	}
}

func TestVersionLine(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "e83ebe3c"}, {Key: "vcs.time", Value: "2026-12-02T05:00:00Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	if got := versionLine(bi, true); !strings.HasPrefix(got, "layover v1.2.3 (revision e83ebe3c, 2026-12-02T05:00:00Z, modified) go1.26.8 ") {
		t.Errorf("versionLine = %q", got)
	}
	bi.Settings[2].Value = "false"
	if got := versionLine(bi, true); strings.Contains(got, "modified") {
		t.Errorf("an unmodified tree: %q", got)
	}
	if got := versionLine(nil, false); !strings.HasPrefix(got, "layover (devel) ") {
		t.Errorf("no build info: %q", got)
	}
	code, v1, _ := mainOut(t, "--version")
	code2, v2, _ := mainOut(t, "version")
	if code != 0 || code2 != 0 || v1 != v2 || !strings.HasPrefix(v1, "layover ") || strings.Count(v1, "\n") != 1 {
		t.Errorf("--version %d %q, version %d %q; want the same one line", code, v1, code2, v2)
	}
}

func TestCompletionUnknownShellExits2(t *testing.T) {
	code, out, errs := mainOut(t, "completion", "tcsh")
	if code != 2 || out != "" || strings.Count(errs, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// completionScript writes layover completion SHELL to a file.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	code, out, errs := mainOut(t, "completion", shell)
	if code != 0 {
		t.Fatalf("completion %s: exit %d: %s", shell, code, errs)
	}
	p := filepath.Join(t.TempDir(), "layover."+shell)
	if err := os.WriteFile(p, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Each script parses in its shell (skipped where the shell is missing).
func TestCompletionScriptsParse(t *testing.T) {
	for shell, check := range map[string][]string{"bash": {"-n"}, "zsh": {"-n"}, "fish": {"--no-execute"}} {
		t.Run(shell, func(t *testing.T) {
			sh, err := exec.LookPath(shell)
			if err != nil {
				t.Skipf("%s not installed", shell)
			}
			p := completionScript(t, shell)
			if out, err := exec.Command(sh, append(check, p)...).CombinedOutput(); err != nil {
				t.Fatalf("%s %v: %v\n%s", shell, check, err, out)
			}
		})
	}
}

// The bash completion completes commands, subcommands and each command's
// own flags, as a user pressing tab sees them.
func TestBashCompletionCompletes(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	p := completionScript(t, "bash")
	for _, c := range []struct{ words, want string }{
		{"layover fl", "flow"},
		{"layover flow su", "submit"},
		{"layover flow run --ru", "--run-id"},
		{"layover status --st", "--store"},
		{"layover serve --drain", "--drain-timeout"},
		{"layover completion fi", "fish"},
		{"layover help ca", "cancel"},
	} {
		script := "source " + p + "; COMP_WORDS=(" + c.words + "); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _layover; echo \"${COMPREPLY[*]}\""
		out, err := exec.Command(bash, "-c", script).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != c.want {
			t.Errorf("%q: completed %q (%v); want %q", c.words, out, err, c.want)
		}
	}
}

// The fish completion offers the same, where fish is installed.
func TestFishCompletionCompletes(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("fish not installed")
	}
	p := completionScript(t, "fish")
	for _, c := range []struct{ line, want string }{
		{"layover fl", "flow\t"},
		{"layover flow run --ru", "--run-id\t"},
		{"layover status --st", "--store\t"},
	} {
		out, err := exec.Command(fish, "--no-config", "-c", "source "+p+"; complete -C '"+c.line+"'").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), c.want) {
			t.Errorf("%q: completed %q (%v); want %q first", c.line, out, err, c.want)
		}
	}
}
