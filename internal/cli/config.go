package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/layoverhq/layover/internal/configfile"
	"github.com/layoverhq/layover/redact"
)

// A config file and LAYOVER_<FLAG> variables give values to the flags of
// configKeys (docs/configuration.md), so a cron line stays short. The flag
// set does it for every command alike, in parse: after the command line is
// parsed, each of those flags the command defines and the line did not
// give takes its LAYOVER_<FLAG> variable, else the file's value from the
// command's own table, else from the top level; the value goes through the
// flag's own Set, so it is checked as the flag is. A flag given wins, then
// the variable, then the file, then the flag's default.

// configKeys are the flags a config file and the environment may set, by
// name. They are the flags of quota policy, of the store and the
// principal, and the durable host's tuning: the same for every run of a
// machine. A flag that names one job or one run (--id, --run-id, --quota,
// --max-attempts) is not one: a value from a file would make every
// submission alike. No key is a token: tokens come from their own
// variables (docs/secrets.md). The secret keys, whose values may hold a
// secret (the store URL's password, a webhook URL's), are never quoted in
// an error; serve masks them in its log as it does when they are flags.
var configKeys = map[string]configKey{
	"reserve":           {repeatable: true, split: commaList},
	"reset-margin":      {},
	"jitter":            {},
	"max-total-wait":    {},
	"secondary-wait":    {},
	"secondary-retries": {},
	"unknown-reset":     {},
	"defer-after":       {},
	"pace":              {},
	"store":             {secret: true},
	"principal":         {},
	"lease":             {},
	"heartbeat":         {},
	"resume-rate":       {},
	"concurrency":       {},
	"retry-backoff":     {},
	"auth-recheck":      {},
	"notify":            {repeatable: true, split: strings.Fields, secret: true},
	"log-format":        {},
	"listen":            {},
	"token-file":        {},
	"drain-timeout":     {},
	"max-hold":          {},
	"max-body":          {},
	"max-held":          {},
	"upstream":          {repeatable: true, split: strings.Fields},
	"allow-remote":      {},
}

// configKey is how a config key's value is read and shown.
type configKey struct {
	// repeatable: the flag may be repeated, and a file may give a list.
	repeatable bool
	// split, for a repeatable flag, parts a variable (or a file's string)
	// into its values: at commas for a reserve ("100,graphql=50"), at
	// spaces for URLs (which may hold commas).
	split func(string) []string
	// secret: the value may hold a secret (the store URL's password), so
	// an error about it never quotes it.
	secret bool
}

// configFlag names the flag that names the config file.
const configFlag = "config"

// configEnv names the variable that names the config file when --config
// is not given.
const configEnv = "LAYOVER_CONFIG"

// envName is the variable that sets flag name: LAYOVER_ and the name in
// capitals, its dashes as underscores (LAYOVER_MAX_TOTAL_WAIT).
func envName(name string) string {
	return "LAYOVER_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// configScopes are the commands a config file may have a table for: those
// with a flag of configKeys, and "flow" for all of flow's.
var configScopes = map[string]bool{
	"pass": true, "run": true, "status": true, "activity": true, "serve": true, "submit": true,
	"jobs": true, "show": true, "cancel": true, "approve": true, "unblock": true, "adopt": true,
	"checkpoint": true, "gateway": true, "flow": true, "flow run": true, "flow submit": true, "flow status": true, "flow cancel": true,
}

// configSchema is what a config file may hold: configKeys, at the top
// level or in a command's table.
func configSchema() configfile.Schema {
	keys := make(map[string]bool, len(configKeys))
	for name, k := range configKeys {
		keys[name] = k.repeatable
	}
	return configfile.Schema{Keys: keys, Scopes: configScopes}
}

// addConfigFlag defines --config on fs when fs has a flag of configKeys.
func (fs *flagSet) addConfigFlag() {
	if fs.Lookup(configFlag) != nil {
		return
	}
	configurable := false
	fs.VisitAll(func(f *flag.Flag) { configurable = configurable || isConfigKey(f.Name) })
	if configurable {
		fs.String(configFlag, "", "read flag values from this TOML or YAML `file`; LAYOVER_<FLAG> variables override it, "+
			"and flags override both (default $"+configEnv+", else $XDG_CONFIG_HOME/layover/config.toml or config.yaml when "+
			"there is one; \"\" for none; docs/configuration.md)")
	}
}

func isConfigKey(name string) bool {
	_, ok := configKeys[name]
	return ok
}

// applyConfig gives each flag of configKeys that fs defines and the
// command line did not set its value from the environment, else from the
// config file. A value its flag refuses is a usage error naming the
// variable, or the file, the line when known and the key.
func (fs *flagSet) applyConfig(env *Env) error {
	cf := fs.Lookup(configFlag)
	if cf == nil {
		return nil
	}
	if env.Getenv == nil { // as Main makes it
		env.Getenv = func(string) string { return "" }
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	file, err := loadConfig(env, given[configFlag], cf.Value.String())
	if err != nil {
		return err
	}
	scopes := commandScopes(fs.Name())
	if file != nil {
		if err := fs.checkOwnTable(file); err != nil {
			return err
		}
	}
	var first error
	fs.VisitAll(func(f *flag.Flag) {
		if first == nil && !given[f.Name] && isConfigKey(f.Name) {
			first = fs.configure(env, file, scopes, f.Name)
		}
	})
	return first
}

// configure sets flag name from its variable, else from file (nil: none).
func (fs *flagSet) configure(env *Env, file *configfile.File, scopes []string, name string) error {
	key := configKeys[name]
	if v := env.Getenv(envName(name)); v != "" {
		for _, item := range key.items(v) {
			if err := fs.Set(name, item); err != nil {
				return usageErr("%s: %s", envName(name), key.invalid(item, err))
			}
		}
		return nil
	}
	if file == nil {
		return nil
	}
	v, scope, ok := file.Lookup(scopes, name)
	if !ok {
		return nil
	}
	list := v.Items
	if !v.List {
		list = key.items(v.Items[0])
	}
	for _, item := range list {
		if err := fs.Set(name, item); err != nil {
			return usageErr("%v", file.Fault(scope, name, v.Line, key.invalid(item, err)))
		}
	}
	return nil
}

// invalid says why the flag refused item: quoting it, unless the key is a
// secret; any secret in the flag's error masked (redact).
func (k configKey) invalid(item string, err error) string {
	if k.secret {
		return "invalid value (not shown): " + redact.String(err.Error(), item, redact.URLPassword(item))
	}
	return redact.String(fmt.Sprintf("invalid value %q: %v", shown(item), err))
}

// items parts a flag's text into its values (configKey.split); the text
// of a flag that is not repeatable is one value.
func (k configKey) items(v string) []string {
	if k.split == nil {
		return []string{v}
	}
	return k.split(v)
}

// commaList parts "100, graphql=50" at its commas, leaving out empty parts.
func commaList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// checkOwnTable refuses a key in the command's own table (not the top
// level's, nor flow's, which apply to the commands that have the flag)
// that the command has no flag for.
func (fs *flagSet) checkOwnTable(file *configfile.File) error {
	scope := fs.Name()
	for _, key := range file.Keys(scope) {
		if fs.Lookup(key) == nil {
			v, _, _ := file.Lookup([]string{scope}, key)
			return usageErr("%v", file.Fault(scope, key, v.Line, fmt.Sprintf("%s has no --%s flag", scope, key)))
		}
	}
	return nil
}

// commandScopes are the tables of a config file that apply to the command
// named name, least specific first: the top level (""), then each prefix
// of the name ("flow", "flow run").
func commandScopes(name string) []string {
	scopes := []string{""}
	words := strings.Fields(name)
	for i := range words {
		scopes = append(scopes, strings.Join(words[:i+1], " "))
	}
	return scopes
}

// loadConfig reads the config file: --config's when given ("" for none),
// else $LAYOVER_CONFIG's, else the default file when there is one. A file
// named that is missing, a file that cannot be read and a file's fault
// are usage errors; no default file is none (nil).
func loadConfig(env *Env, flagGiven bool, flagValue string) (*configfile.File, error) {
	path, source := flagValue, "--"+configFlag
	switch {
	case flagGiven:
		if path == "" {
			return nil, nil
		}
	case env.Getenv(configEnv) != "":
		path, source = env.Getenv(configEnv), configEnv
	default:
		var err error
		if path, err = defaultConfigPath(env.Getenv); err != nil || path == "" {
			return nil, err
		}
		source = "config"
	}
	file, err := configfile.Read(path, configSchema())
	var fe *configfile.Error
	switch {
	case errors.As(err, &fe):
		return nil, usageErr("%v", err)
	case err != nil:
		return nil, usageErr("%s: %v", source, err)
	}
	return file, nil
}

// configNames are the names the default config file may have, in its
// folder.
var configNames = []string{"config.toml", "config.yaml", "config.yml"}

// defaultConfigPath returns the default config file,
// $XDG_CONFIG_HOME/layover/config.{toml,yaml,yml} (XDG_CONFIG_HOME when it
// is an absolute path, else $HOME/.config), or "" when there is none. Two
// of them is a usage error: which one is meant is not clear.
func defaultConfigPath(getenv func(string) string) (string, error) {
	dir := getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(dir) {
		home := getenv("HOME")
		if !filepath.IsAbs(home) {
			return "", nil
		}
		dir = filepath.Join(home, ".config")
	}
	var found []string
	for _, n := range configNames {
		p := filepath.Join(dir, "layover", n)
		if _, err := os.Stat(p); err == nil {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	default:
		return "", usageErr("config: %s and %s both exist; keep one, or name one with --%s",
			shown(found[0]), shown(found[1]), configFlag)
	}
}
