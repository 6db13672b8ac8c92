package github

import (
	"os"
	"path/filepath"
	"testing"
)

const hostsYML = `# gh hosts
github.com:
    users:
        octocat:
            oauth_token: gho_secret
        user: not-this-one
    git_protocol: https
    user: octocat
"ghes.example.com":
  oauth_token: gho_other
  user: 'ent_user'   # managed user
empty.example.com:
    git_protocol: ssh
bad.example.com:
    user: "bad user"
`

func writeHosts(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hosts.yml"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestGHConfigUser(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeHosts(t, filepath.Join(dir, "ghdir"), hostsYML)
	writeHosts(t, filepath.Join(dir, "xdg", "gh"), "github.com:\n    user: from-xdg\n")
	writeHosts(t, filepath.Join(dir, "home", ".config", "gh"), "github.com:\r\n\tuser: from-home\r\n")

	ghDir := map[string]string{"GH_CONFIG_DIR": filepath.Join(dir, "ghdir"), "XDG_CONFIG_HOME": filepath.Join(dir, "xdg"), "HOME": filepath.Join(dir, "home")}
	xdg := map[string]string{"XDG_CONFIG_HOME": filepath.Join(dir, "xdg"), "HOME": filepath.Join(dir, "home")}
	home := map[string]string{"HOME": filepath.Join(dir, "home")}
	tests := []struct {
		name string
		env  map[string]string
		host string
		user string
		ok   bool
	}{
		{"GH_CONFIG_DIR first", ghDir, "github.com", "octocat", true},
		{"host is case-insensitive", ghDir, "GitHub.com", "octocat", true},
		{"quoted host and value with comment", ghDir, "ghes.example.com", "ent_user", true},
		{"host without user", ghDir, "empty.example.com", "", false},
		{"implausible login", ghDir, "bad.example.com", "", false},
		{"unknown host", ghDir, "other.example.com", "", false},
		{"XDG_CONFIG_HOME second", xdg, "github.com", "from-xdg", true},
		{"HOME last, CRLF and tabs", home, "github.com", "from-home", true},
		{"no config dir", map[string]string{}, "github.com", "", false},
		{"missing file", map[string]string{"GH_CONFIG_DIR": filepath.Join(dir, "nope")}, "github.com", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			user, ok := GHConfigUser(env(tt.env), tt.host)
			if user != tt.user || ok != tt.ok {
				t.Errorf("GHConfigUser = %q, %v; want %q, %v", user, ok, tt.user, tt.ok)
			}
		})
	}
}

func TestHostsUser(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, data, host, user string
		ok                     bool
	}{
		{"user before users", "github.com:\n  user: a\n  users:\n    a:\n", "github.com", "a", true},
		{"nested user ignored", "github.com:\n  users:\n    user: b\n", "github.com", "", false},
		{"other host's user", "a.com:\n  user: x\nb.com:\n  user: y\n", "b.com", "y", true},
		{"top-level scalar key is not a host", "github.com: x\n  user: z\n", "github.com", "", false},
		{"document marker", "---\ngithub.com:\n  user: d\n", "github.com", "d", true},
		{"double-quoted value", "github.com:\n  user: \"q-1\"\n", "github.com", "q-1", true},
		{"empty host", "github.com:\n  user: a\n", "", "", false},
		{"flow map not understood", "github.com: {user: a}\n", "github.com", "", false},
		{"no newline at end", "github.com:\n  user: last", "github.com", "last", true},
		{"empty", "", "github.com", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			user, ok := hostsUser([]byte(tt.data), tt.host)
			if user != tt.user || ok != tt.ok {
				t.Errorf("hostsUser = %q, %v; want %q, %v", user, ok, tt.user, tt.ok)
			}
		})
	}
}
