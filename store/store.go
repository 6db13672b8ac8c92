// Package store defines what layover remembers and the interface every
// storage backend implements. It is an internal seam: backends live in
// subpackages (store/sqlite) and all pass the conformance suite in
// store/storetest.
//
// A store keeps quota states, learned logins, the activity log and the
// commands that are waiting. It never keeps a token: principals are logins or
// token fingerprints (see quota.TokenFingerprint).
package store

import (
	"context"
	"errors"
	"time"

	"github.com/layoverhq/layover/quota"
)

// Sentinel errors of every backend.
var (
	// ErrNotFound: the row asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrUnsupported: the location names a backend this build does not have.
	ErrUnsupported = errors.New("unsupported store")
	// ErrSchemaOld: a store opened read-only has an older schema than this
	// layover reads (or none yet); only a read-write open upgrades it.
	ErrSchemaOld = errors.New("the store's schema is older than this layover reads")
)

// Activity is one line of the activity log.
type Activity struct {
	ID   int64
	At   time.Time
	Kind string // "skip", "wait", "waited", ...
	Line string // what an operator reads, e.g. "skipped: GitHub Quota wait until …"
}

// Waiter is a command registered in the store while it waits for a quota, so
// that status can list it.
type Waiter struct {
	ID        int64
	Hostname  string // machine the waiting process runs on
	PID       int
	Command   string // the command line, as the user typed it
	Key       quota.Key
	Stage     string // "Quota wait until <time>"
	WaitUntil time.Time
	StartedAt time.Time
}

// Store is layover's memory. Implementations are safe for concurrent use by
// many goroutines and many processes at once; every write is atomic.
type Store interface {
	// RecordStates upserts observations. For each key the most recently
	// observed state wins, whatever order concurrent writers commit in.
	RecordStates(ctx context.Context, states []quota.State) error
	// States returns the stored states of the given keys (absent keys are
	// left out), expired or not: decisions filter by time themselves.
	States(ctx context.Context, keys []quota.Key) ([]quota.State, error)
	// AllStates returns every stored state, ordered by key.
	AllStates(ctx context.Context) ([]quota.State, error)

	// Login returns the login learned for a token fingerprint on host.
	Login(ctx context.Context, host, fingerprint string) (login string, ok bool, err error)
	// LearnLogin records that the token with this fingerprint belongs to
	// login, and merges the states kept under the token principal
	// ("tok:"+fingerprint) into the login's, so two tokens of one user are
	// one quota.
	LearnLogin(ctx context.Context, host, fingerprint, login string, at time.Time) error

	// RecordSkip writes a skip line to the activity log only when reasonKey
	// differs from the last skip reason recorded for scope. It reports
	// whether it wrote.
	RecordSkip(ctx context.Context, scope, reasonKey string, a Activity) (bool, error)
	// ClearSkip forgets scope's last skip reason, so the next skip writes.
	ClearSkip(ctx context.Context, scope string) error
	// AppendActivity writes one line to the activity log.
	AppendActivity(ctx context.Context, a Activity) error
	// Activity returns the newest limit lines (all when limit <= 0), oldest
	// first.
	Activity(ctx context.Context, limit int) ([]Activity, error)

	// RegisterWaiter records a waiting command and returns its id.
	RegisterWaiter(ctx context.Context, w Waiter) (int64, error)
	// RemoveWaiter deletes a waiter; removing one that is gone is no error.
	RemoveWaiter(ctx context.Context, id int64) error
	// Waiters lists the registered waiters, oldest first.
	Waiters(ctx context.Context) ([]Waiter, error)

	// Close releases the store.
	Close() error
}
