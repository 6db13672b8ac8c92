package postgres_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/store/postgres"
)

// FuzzRedactHidesPassword: whatever DSN a user writes, with the password
// escaped or not (an unescaped '/', '?', '#' or '@' in it makes another
// URL), neither Redact nor an error of Open shows the password. Open runs
// with its context already cancelled, so it parses the DSN and fails
// without reaching any server.
func FuzzRedactHidesPassword(f *testing.F) {
	f.Add("alice", "s3cret-password", "db.example.com:5432", "/layover", "sslmode=disable", false)
	f.Add("alice", "12/34567890", "db.example.com", "/layover", "", false)
	f.Add("bob", "pa?ss#word@x", "localhost:port", "/db", "password=other-secret", false)
	f.Add("", "s3cret-password", "h", "", "sslpassword=s3cret-password", true)
	f.Add("u", "s3cret:pass/word", "[::1]:5432", "/db", "search_path=x", false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.Fuzz(func(t *testing.T, user, pw, host, path, query string, escape bool) {
		fuzzbound.Run(t, func() {
			// The password starts and ends with a mark found nowhere else in
			// the DSN: a message showing the mark shows (part of) the password.
			const mark = "§"
			if strings.Contains(user+host+path+query, mark) || strings.ContainsRune(pw, 0) {
				return
			}
			pw = mark + pw + mark
			leaks := func(msg string) bool {
				return strings.Contains(msg, mark) || strings.Contains(strings.ToUpper(msg), "%C2%A7")
			}
			for _, scheme := range []string{"postgres://", "postgresql://"} {
				p := pw
				if escape {
					p = url.PathEscape(pw)
				}
				dsn := scheme + user + ":" + p + "@" + host + path
				if query != "" {
					dsn += "?" + query
				}
				if got := postgres.Redact(dsn); leaks(got) {
					t.Fatalf("Redact(%q) = %q shows the password", dsn, got)
				}
				s, err := postgres.Open(ctx, dsn)
				if err == nil {
					s.Close()
					t.Fatalf("Open(%q) with a cancelled context succeeded", dsn)
				}
				if msg := err.Error(); leaks(msg) || strings.ContainsAny(msg, "\n\r") {
					t.Fatalf("Open(%q) = %q: the password shows, or more than one line", dsn, msg)
				}
			}
		})
	})
}
