package github

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Issue 8 finding 7: GET /user may answer anything; only a login that can
// be one is kept, so a hostile or broken server cannot store a megabyte, an
// escape sequence or a key separator as a principal.
func TestClientLoginRefusesWhatCannotBeALogin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		login string
		ok    bool
	}{
		{"octocat", true},
		{"Octo-Cat-42", true},
		{"octocat_acme", true}, // an Enterprise Managed User
		{"first.last", true},   // GitHub Enterprise Server from a directory
		{strings.Repeat("a", MaxLoginLen), true},
		{strings.Repeat("a", MaxLoginLen+1), false},
		{strings.Repeat("a", 1<<20-64), false},
		{"\x1b[31mocto\x1b[0m", false},
		{"octo\u202ecat", false},
		{"octo cat", false},
		{"octo/cat", false},
		{"tok:0123456789ab", false},
		{"octo\ncat", false},
		{"ôcto", false},
	}
	for _, tt := range tests {
		t.Run(tt.login[:min(len(tt.login), 20)], func(t *testing.T) {
			t.Parallel()
			srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
				body, _ := json.Marshal(map[string]any{"login": tt.login, "id": 1})
				_, _ = w.Write(body)
			})
			c := &Client{BaseURL: srv.URL, Token: "good", HTTP: srv.Client()}
			login, err := c.Login(context.Background())
			if tt.ok && (err != nil || login != tt.login) {
				t.Errorf("Login = %q, %v; want %q", login, err, tt.login)
			}
			if !tt.ok && (err == nil || login != "" || len(err.Error()) > 200 || strings.ContainsRune(err.Error(), 0x1b)) {
				t.Errorf("Login = %q, %.200q; want it refused in a short error that does not quote it", login, err)
			}
			if ValidLogin(tt.login) != tt.ok {
				t.Errorf("ValidLogin = %v, want %v", !tt.ok, tt.ok)
			}
		})
	}
}
