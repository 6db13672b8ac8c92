package github

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Bounds on reading gh's hosts.yml.
const (
	maxHostsFile  = 1 << 20 // bytes read
	maxHostsLines = 20000
)

// GHConfigDir returns gh's configuration directory: GH_CONFIG_DIR, else
// $XDG_CONFIG_HOME/gh, else $HOME/.config/gh; "" when none is set.
func GHConfigDir(getenv func(string) string) string {
	if d := getenv("GH_CONFIG_DIR"); d != "" {
		return d
	}
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "gh")
	}
	if d := getenv("HOME"); d != "" {
		return filepath.Join(d, ".config", "gh")
	}
	return ""
}

// GHConfigUser returns the login gh has recorded for webHost (e.g.
// "github.com"; compared case-insensitively): the `user:` under that host's
// key in hosts.yml of [GHConfigDir]. It reports false when the file is
// missing or unreadable, the host or its user is absent, or the user is not
// a plausible login. It reads at most 1 MiB and understands only the simple
// shape gh writes: top-level host keys with indented `key: value` lines.
func GHConfigUser(getenv func(string) string, webHost string) (string, bool) {
	dir := GHConfigDir(getenv)
	if dir == "" {
		return "", false
	}
	f, err := os.Open(filepath.Join(dir, "hosts.yml"))
	if err != nil {
		return "", false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxHostsFile))
	if err != nil {
		return "", false
	}
	return hostsUser(data, webHost)
}

// hostsUser finds `user:` directly under the top-level key host in data.
func hostsUser(data []byte, host string) (string, bool) {
	host = strings.ToLower(strings.TrimSpace(host))
	if host == "" {
		return "", false
	}
	inHost := false
	childIndent := -1
	for n := 0; len(data) > 0 && n < maxHostsLines; n++ {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		s := strings.TrimRight(string(line), " \t\r")
		content := strings.TrimLeft(s, " \t")
		if content == "" || content[0] == '#' || s == "---" {
			continue
		}
		indent := len(s) - len(content)
		if indent == 0 {
			key, val, ok := yamlKey(content)
			inHost = ok && val == "" && strings.EqualFold(key, host)
			childIndent = -1
			continue
		}
		if !inHost {
			continue
		}
		if childIndent < 0 {
			childIndent = indent
		}
		if indent != childIndent {
			continue // a nested map such as users:
		}
		if key, val, ok := yamlKey(content); ok && key == "user" {
			if ValidLogin(val) {
				return val, true
			}
			return "", false
		}
	}
	return "", false
}

// yamlKey splits `key: value` or `key:` (a map follows), unquoting either
// side and dropping a trailing comment.
func yamlKey(s string) (key, value string, ok bool) {
	var rest string
	if strings.HasPrefix(s, `"`) || strings.HasPrefix(s, `'`) {
		q := s[:1]
		end := strings.Index(s[1:], q)
		if end < 0 {
			return "", "", false
		}
		key, rest = s[1:1+end], s[2+end:]
		if !strings.HasPrefix(rest, ":") {
			return "", "", false
		}
		rest = rest[1:]
	} else {
		i := strings.Index(s, ": ")
		switch {
		case i >= 0:
			key, rest = s[:i], s[i+1:]
		case strings.HasSuffix(s, ":"):
			key = s[:len(s)-1]
		default:
			return "", "", false
		}
	}
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", "", false
	}
	rest = strings.TrimSpace(rest)
	if strings.HasPrefix(rest, "#") {
		rest = ""
	}
	if len(rest) >= 2 && (rest[0] == '"' || rest[0] == '\'') {
		if end := strings.IndexByte(rest[1:], rest[0]); end >= 0 {
			rest = rest[1 : 1+end]
		}
	} else if i := strings.Index(rest, " #"); i >= 0 {
		rest = strings.TrimSpace(rest[:i])
	}
	return strings.TrimSpace(key), rest, key != ""
}
