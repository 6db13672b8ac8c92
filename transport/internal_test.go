package transport

import (
	"net/http"
	"net/url"
	"testing"
)

func TestChooseByHost(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GITHUB_API_URL": "https://ghe.example.com:8443/api/v3", "ANTHROPIC_BASE_URL": "http://127.0.0.1:8089"}
	b := newByHost(func(k string) string { return vars[k] })
	tests := []struct {
		url  string
		want string // provider name, "" for none
	}{
		{"https://api.github.com/repos/o/r", "github"},
		{"https://API.GitHub.com/repos/o/r", "github"},
		{"https://api.github.com:443/user", "github"},
		{"https://api.octo.ghe.com/user", "github"},
		{"https://ghe.example.com:8443/api/v3/user", "github"},
		{"https://ghe.example.com/api/v3/user", ""},
		{"https://api.anthropic.com/v1/messages", "anthropic"},
		{"https://api.openai.com/v1/responses", "openai"},
		{"https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent", "gemini"},
		{"https://example.com/", ""},
		{"http://127.0.0.1:8080/", ""},
		{"http://127.0.0.1:8089/v1/messages", "anthropic"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			p := b.choose(keyHost(u))
			got := ""
			if p != nil {
				got = p.Name
			}
			if got != tt.want {
				t.Errorf("choose(%q) = %q, want %q", keyHost(u), got, tt.want)
			}
		})
	}
}

func TestKeyHost(t *testing.T) {
	t.Parallel()
	tests := []struct{ url, want string }{
		{"https://api.github.com/x", "api.github.com"},
		{"https://API.GITHUB.COM/x", "api.github.com"},
		{"https://api.github.com:443/x", "api.github.com"},
		{"http://h.example:80/x", "h.example"},
		{"http://h.example:443/x", "h.example:443"},
		{"http://127.0.0.1:5000/x", "127.0.0.1:5000"},
		{"http://[::1]:5000/x", "[::1]:5000"},
	}
	for _, tt := range tests {
		u, _ := url.Parse(tt.url)
		if got := keyHost(u); got != tt.want {
			t.Errorf("keyHost(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

func TestCredential(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		header map[string]string
		url    string
		want   string
	}{
		{"bearer", map[string]string{"Authorization": "Bearer ghp_x"}, "", "ghp_x"},
		{"token scheme", map[string]string{"Authorization": "token ghp_x"}, "", "ghp_x"},
		{"basic keeps the whole value", map[string]string{"Authorization": "Basic dXNlcjpwYXNz"}, "", "Basic dXNlcjpwYXNz"},
		{"x-api-key", map[string]string{"X-Api-Key": "sk-ant-x"}, "", "sk-ant-x"},
		{"x-goog-api-key", map[string]string{"X-Goog-Api-Key": "AIza"}, "", "AIza"},
		{"query key", nil, "?key=AIzaQ", "AIzaQ"},
		{"none", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequest(http.MethodGet, "https://h.example/p"+tt.url, nil)
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			if got := credential(req); got != tt.want {
				t.Errorf("credential = %q, want %q", got, tt.want)
			}
		})
	}
}
