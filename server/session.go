package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"
)

// A login opens a session: a random id (the cookie's value) that the
// server keeps, with its expiry, until logout, the expiry or a restart.
// The forms' CSRF token is a MAC of the id under a key drawn at New, so
// it names one session and says nothing of the console token.
const (
	// sessionLifetime is how long a session lasts after its login.
	sessionLifetime = 12 * time.Hour
	// maxSessions bounds the sessions kept; a login beyond it ends the
	// session closest to its expiry.
	maxSessions = 1024
)

// sessions are the open sessions. Safe for concurrent use.
type sessions struct {
	key []byte // the CSRF tokens' MAC key
	mu  sync.Mutex
	// expiry is each open session's end, by its id.
	expiry map[string]time.Time
}

func newSessions() (*sessions, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	return &sessions{key: key, expiry: map[string]time.Time{}}, nil
}

// open starts a session at now and returns its id: 32 random bytes in
// hex.
func (ss *sessions) open(now time.Time) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	id := hex.EncodeToString(b)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.expiry) >= maxSessions {
		oldest, first := "", time.Time{}
		for s, end := range ss.expiry {
			if !now.Before(end) {
				delete(ss.expiry, s)
			} else if oldest == "" || end.Before(first) {
				oldest, first = s, end
			}
		}
		if len(ss.expiry) >= maxSessions {
			delete(ss.expiry, oldest)
		}
	}
	ss.expiry[id] = now.Add(sessionLifetime)
	return id, nil
}

// valid reports whether id is an open session at now; an expired one is
// ended.
func (ss *sessions) valid(id string, now time.Time) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	end, ok := ss.expiry[id]
	if ok && !now.Before(end) {
		delete(ss.expiry, id)
		return false
	}
	return ok
}

// end ends session id (logout).
func (ss *sessions) end(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.expiry, id)
}

// csrf is the CSRF token of session id's forms.
func (ss *sessions) csrf(id string) string {
	m := hmac.New(sha256.New, ss.key)
	m.Write([]byte("layover console csrf " + id))
	return hex.EncodeToString(m.Sum(nil))
}
