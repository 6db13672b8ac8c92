package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// commandGroups are the commands that dispatch subcommands, and theirs.
func commandGroups() map[string][]string {
	var flow []string
	for _, c := range flowCommands() {
		flow = append(flow, c.name)
	}
	var sched []string
	for _, c := range scheduleCommands() {
		sched = append(sched, c.name)
	}
	var sims []string
	for _, c := range simCommands() {
		sims = append(sims, c.name)
	}
	return map[string][]string{"flow": flow, "schedule": sched, "receipt": {"validate", "show"}, "sim": sims, "gateway": {"env"}}
}

// completionFlag is one flag as a completion offers it.
type completionFlag struct{ name, usage string }

// completionTree is every command key ("run", "flow run") with its
// summary and flags, read from the commands' own flag sets: each command
// is run with -h and hands its flag set over instead of printing.
type completionTree struct {
	top    []string            // top-level commands, in the general help's order
	groups map[string][]string // group → subcommands
	flags  map[string][]completionFlag
}

func buildCompletionTree(ctx context.Context) completionTree {
	t := completionTree{groups: commandGroups(), flags: map[string][]completionFlag{}}
	collect := func(run func(context.Context, *Env, []string) error, args []string) {
		env := &Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }}
		env.collectFlags = func(fs *flagSet) {
			var fl []completionFlag
			fs.VisitAll(func(f *flag.Flag) {
				_, usage := flag.UnquoteUsage(f)
				usage, _, _ = strings.Cut(usage, "\n")
				fl = append(fl, completionFlag{"--" + f.Name, usage})
			})
			t.flags[fs.Name()] = fl
		}
		// Only the flag set matters: a command run with -h returns
		// errHelp once it handed it over.
		_ = run(ctx, env, args)
	}
	for _, c := range commands() {
		t.top = append(t.top, c.name)
		if subs, ok := t.groups[c.name]; ok {
			for _, s := range subs {
				collect(c.run, []string{s, "-h"})
			}
			continue
		}
		collect(c.run, []string{"-h"})
	}
	return t
}

// runCompletion prints the completion script for one shell.
func runCompletion(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet("completion", "completion bash|zsh|fish")
	shell, err := fs.parseArg(env, args, "shell (bash, zsh or fish)")
	if err != nil {
		return err
	}
	t := buildCompletionTree(ctx)
	switch shell {
	case "bash":
		t.bash(env.Stdout)
	case "zsh":
		t.zsh(env.Stdout)
	case "fish":
		t.fish(env.Stdout)
	default:
		return usageErr("completion: unknown shell %q: want bash, zsh or fish", shown(shell))
	}
	return nil
}

// keys are the command keys that take flags, sorted.
func (t completionTree) keys() []string {
	var ks []string
	for k := range t.flags {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func flagNames(fl []completionFlag) string {
	var names []string
	for _, f := range fl {
		names = append(names, f.name)
	}
	return strings.Join(names, " ")
}

// sq quotes s for a POSIX shell (bash, zsh) or fish between single quotes.
func sq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// fishQ quotes s for fish, whose single quotes escape ' and \ with \.
func fishQ(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func (t completionTree) bash(w io.Writer) {
	fmt.Fprintf(w, `# bash completion for layover: layover completion bash > /etc/bash_completion.d/layover
_layover() {
    local cur=${COMP_WORDS[COMP_CWORD]} key i
    for ((i = 1; i < COMP_CWORD; i++)); do
        if [[ ${COMP_WORDS[i]} == -- ]]; then
            # What follows -- is the command layover runs.
            COMPREPLY=($(compgen -c -- "$cur"))
            return
        fi
    done
    if ((COMP_CWORD == 1)); then
        COMPREPLY=($(compgen -W %s -- "$cur"))
        return
    fi
    key=${COMP_WORDS[1]}
    case $key in
`, sq(strings.Join(t.top, " ")))
	for _, g := range sortedKeys(t.groups) {
		fmt.Fprintf(w, `    %s)
        if ((COMP_CWORD == 2)); then
            COMPREPLY=($(compgen -W %s -- "$cur"))
            return
        fi
        key="$key ${COMP_WORDS[2]}" ;;
`, g, sq(strings.Join(t.groups[g], " ")))
	}
	fmt.Fprintf(w, `    help)
        ((COMP_CWORD == 2)) && COMPREPLY=($(compgen -W %s -- "$cur"))
        return ;;
    completion)
        ((COMP_CWORD == 2)) && COMPREPLY=($(compgen -W 'bash zsh fish' -- "$cur"))
        return ;;
    esac
    if [[ $cur == -* ]]; then
        local flags=
        case $key in
`, sq(strings.Join(t.top, " ")))
	for _, k := range t.keys() {
		fmt.Fprintf(w, "        %s) flags=%s ;;\n", sq(k), sq(flagNames(t.flags[k])))
	}
	fmt.Fprint(w, `        esac
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _layover layover
`)
}

func sortedKeys(m map[string][]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (t completionTree) zsh(w io.Writer) {
	described := func(indent string, names []string, prefix string) {
		fmt.Fprintf(w, "%scmds=(\n", indent)
		for _, n := range names {
			fmt.Fprintf(w, "%s    %s\n", indent, sq(n+":"+helpTable[prefix+n].summary))
		}
		fmt.Fprintf(w, "%s)\n", indent)
	}
	fmt.Fprint(w, `#compdef layover
# zsh completion for layover: layover completion zsh > "${fpath[1]}/_layover"
_layover() {
    local -a cmds flags
    local key i
    for ((i = 2; i < CURRENT; i++)); do
        if [[ $words[i] == -- ]]; then
            _command_names
            return
        fi
    done
    if ((CURRENT == 2)); then
`)
	described("        ", t.top, "")
	fmt.Fprint(w, `        _describe command cmds
        return
    fi
    key=$words[2]
    case $key in
`)
	for _, g := range sortedKeys(t.groups) {
		fmt.Fprintf(w, "    %s)\n        if ((CURRENT == 3)); then\n", g)
		described("            ", t.groups[g], g+" ")
		fmt.Fprint(w, "            _describe subcommand cmds\n            return\n        fi\n        key=\"$key $words[3]\" ;;\n")
	}
	fmt.Fprint(w, `    help)
        if ((CURRENT == 3)); then
`)
	described("            ", t.top, "")
	fmt.Fprint(w, `            _describe command cmds
        fi
        return ;;
    completion)
        ((CURRENT == 3)) && compadd bash zsh fish
        return ;;
    esac
    if [[ $PREFIX == -* ]]; then
        case $key in
`)
	for _, k := range t.keys() {
		fmt.Fprintf(w, "        %s)\n            flags=(\n", sq(k))
		for _, f := range t.flags[k] {
			fmt.Fprintf(w, "                %s\n", sq(f.name+":"+f.usage))
		}
		fmt.Fprint(w, "            ) ;;\n")
	}
	fmt.Fprint(w, `        esac
        _describe flag flags
        return
    fi
    _files
}
if [[ $funcstack[1] == _layover ]]; then
    _layover "$@"
else
    compdef _layover layover
fi
`)
}

func (t completionTree) fish(w io.Writer) {
	fmt.Fprint(w, `# fish completion for layover: layover completion fish > ~/.config/fish/completions/layover.fish
# __layover_key prints the command being completed ("run", "flow run", or
# "flow " while a group awaits its subcommand); it fails after --.
function __layover_key
    set -l words (commandline -opc)
    set -e words[1]
    contains -- -- $words; and return 1
    test (count $words) -eq 0; and return 0
    switch $words[1]
`)
	for _, g := range sortedKeys(t.groups) {
		fmt.Fprintf(w, "        case %s\n            if test (count $words) -ge 2\n                echo \"$words[1] $words[2]\"\n            else\n                echo \"$words[1] \"\n            end\n", g)
	}
	fmt.Fprint(w, `        case '*'
            echo $words[1]
    end
end
function __layover_at
    set -l key (__layover_key); or return 1
    test "$key" = "$argv[1]"
end
`)
	for _, c := range t.top {
		fmt.Fprintf(w, "complete -c layover -n %s -f -a %s -d %s\n", fishQ("__layover_at ''"), c, fishQ(helpTable[c].summary))
	}
	for _, g := range sortedKeys(t.groups) {
		for _, s := range t.groups[g] {
			fmt.Fprintf(w, "complete -c layover -n %s -f -a %s -d %s\n", fishQ("__layover_at '"+g+" '"), s, fishQ(helpTable[g+" "+s].summary))
		}
	}
	for _, c := range t.top {
		fmt.Fprintf(w, "complete -c layover -n %s -f -a %s\n", fishQ("__layover_at help"), c)
	}
	fmt.Fprintf(w, "complete -c layover -n %s -f -a 'bash zsh fish'\n", fishQ("__layover_at completion"))
	for _, k := range t.keys() {
		for _, f := range t.flags[k] {
			fmt.Fprintf(w, "complete -c layover -n %s -l %s -d %s\n", fishQ("__layover_at '"+k+"'"), strings.TrimPrefix(f.name, "--"), fishQ(f.usage))
		}
	}
}
