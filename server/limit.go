package server

import (
	"sync"
	"time"
)

// Wrong tokens are limited: after maxWrongTokens wrong ones within
// wrongTokenWindow, every token (the right one too) is refused with 429
// until the window ends, so the token cannot be guessed at speed. The
// limit is the server's, not a client's: a guesser changing addresses
// gains nothing.
const (
	maxWrongTokens   = 20
	wrongTokenWindow = time.Minute
)

// wrongTokens counts the wrong tokens of the current window.
type wrongTokens struct {
	mu    sync.Mutex
	start time.Time // the window's first wrong token
	n     int
}

// blocked reports whether tokens are refused at now, and until when.
func (l *wrongTokens) blocked(now time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	end := l.start.Add(wrongTokenWindow)
	if l.n >= maxWrongTokens && now.Before(end) {
		return end, true
	}
	return time.Time{}, false
}

// wrong counts a wrong token at now.
func (l *wrongTokens) wrong(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 || !now.Before(l.start.Add(wrongTokenWindow)) {
		l.start, l.n = now, 0
	}
	l.n++
}
