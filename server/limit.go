package server

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Wrong tokens are limited per client and overall, within windows of
// wrongTokenWindow:
//   - after maxWrongTokens wrong ones from one client (the host of the
//     request's remote address), that client's tokens, the right one too,
//     are refused with 429 until its window ends, so the token cannot be
//     guessed at speed, while the operator elsewhere still logs in;
//   - after maxWrongTokensAll wrong ones from all clients together, every
//     token is refused until the window ends: a guesser with many
//     addresses still guesses slowly.
//
// At most maxTrackedClients clients are counted one by one; beyond them
// a new client's wrong tokens count overall only.
const (
	maxWrongTokens    = 20
	maxWrongTokensAll = 1000
	wrongTokenWindow  = time.Minute
	maxTrackedClients = 4096
)

// window counts the wrong tokens of one window.
type window struct {
	start time.Time // the window's first wrong token
	n     int
}

// blocked reports whether the window refuses tokens at now (limit wrong
// ones within it), and until when.
func (w *window) blocked(now time.Time, limit int) (time.Time, bool) {
	end := w.start.Add(wrongTokenWindow)
	if w.n >= limit && now.Before(end) {
		return end, true
	}
	return time.Time{}, false
}

// count counts a wrong token at now, opening a new window when the last
// one has ended.
func (w *window) count(now time.Time) {
	if w.n == 0 || !now.Before(w.start.Add(wrongTokenWindow)) {
		w.start, w.n = now, 0
	}
	w.n++
}

// over reports whether the window has ended at now.
func (w *window) over(now time.Time) bool { return !now.Before(w.start.Add(wrongTokenWindow)) }

// wrongTokens counts the wrong tokens of every client and of each one.
type wrongTokens struct {
	mu      sync.Mutex
	all     window
	clients map[string]*window // at most maxTrackedClients
}

// blocked reports whether client's tokens are refused at now, and until
// when.
func (l *wrongTokens) blocked(client string, now time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if until, ok := l.all.blocked(now, maxWrongTokensAll); ok {
		return until, true
	}
	if w := l.clients[client]; w != nil {
		return w.blocked(now, maxWrongTokens)
	}
	return time.Time{}, false
}

// wrong counts a wrong token from client at now.
func (l *wrongTokens) wrong(client string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.count(now)
	if l.clients == nil {
		l.clients = map[string]*window{}
	}
	w := l.clients[client]
	if w == nil {
		if len(l.clients) >= maxTrackedClients {
			for c, cw := range l.clients {
				if cw.over(now) {
					delete(l.clients, c)
				}
			}
			if len(l.clients) >= maxTrackedClients {
				return // counted overall only
			}
		}
		w = &window{}
		l.clients[client] = w
	}
	w.count(now)
}

// clientOf is whom r's wrong tokens count against: the host of its remote
// address (every port of one machine is one client). Behind a proxy every
// request is the proxy's.
func clientOf(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}
