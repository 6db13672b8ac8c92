package llm

import (
	"strings"
	"testing"
)

func TestExcerpt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 5, "short"},
		{"  two\n\tlines  ", 20, "two lines"},
		{"  two\n\tlines  ", 5, "two l…"},
		{strings.Repeat("a", 10), 5, "aaaaa…"},
		{"ééééééé", 5, "ééééé…"},
		{"a\x00b", 5, "a b"},
		{"abcde", 5, "abcde"},
	}
	for _, tt := range tests {
		if got := Excerpt(tt.in, tt.n); got != tt.want {
			t.Errorf("Excerpt(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
