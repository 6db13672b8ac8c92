package transport

import (
	"cmp"
	"context"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// scopeKey names the quotas of one principal on one host.
type scopeKey struct {
	host, principal string
}

// hold is a throttle's wait on one key: nothing is sent before until.
type hold struct {
	until  time.Time
	reason string
}

// scope is the in-memory view of one principal's quotas on one host.
type scope struct {
	// loaded is closed once the store's states have been merged in.
	loaded  chan struct{}
	loading bool
	states  map[string]quota.State // by resource
	holds   map[string]hold        // by resource
}

// ident is what is known of one token on one host.
type ident struct {
	// looked is closed once the store was asked for a learned login.
	looked  chan struct{}
	looking bool
	done    bool   // looked is closed
	login   string // learned by the store; wins over org
	org     string // named by a response
	// resolved is the principal: login, else org, else "tok:" + fingerprint.
	resolved string
}

// view is the Transport's in-memory ledger. Safe for concurrent use.
type view struct {
	st  store.Store
	log func(msg string, args ...any) // Warn logger

	mu     sync.Mutex
	scopes map[scopeKey]*scope
	idents map[scopeKey]*ident // by (host, fingerprint)
}

func newView(st store.Store, warn func(string, ...any)) *view {
	return &view{st: st, log: warn, scopes: map[scopeKey]*scope{}, idents: map[scopeKey]*ident{}}
}

// scopeLocked returns the scope of k, creating it. v.mu must be held.
func (v *view) scopeLocked(k scopeKey) *scope {
	sc := v.scopes[k]
	if sc == nil {
		sc = &scope{loaded: make(chan struct{}), states: map[string]quota.State{}, holds: map[string]hold{}}
		if v.st == nil {
			close(sc.loaded)
		}
		v.scopes[k] = sc
	}
	return sc
}

// load makes sure the store's states of k are in the view: the first
// caller reads the store once (every state, filtered to k, since the
// resources of a host are not all known ahead) while any other caller
// waits for that read or for ctx. A store that fails is logged and the
// view goes on without it (fail open).
func (v *view) load(ctx context.Context, k scopeKey) error {
	if v.st == nil {
		return nil // memory only: a scope starts empty
	}
	v.mu.Lock()
	sc := v.scopeLocked(k)
	first := !sc.loading && v.st != nil
	sc.loading = true
	v.mu.Unlock()
	if first {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		all, err := v.st.AllStates(sctx)
		cancel()
		if err != nil {
			v.log("layover: read quota states", "host", k.host, "principal", k.principal, "err", err)
		}
		v.mu.Lock()
		for _, s := range all {
			if s.Host == k.host && s.Principal == k.principal {
				mergeLocked(sc, s)
			}
		}
		close(sc.loaded)
		v.mu.Unlock()
		return nil
	}
	select {
	case <-sc.loaded:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// mergeLocked keeps s unless the scope has a later observation of its
// resource.
func mergeLocked(sc *scope, s quota.State) {
	if old, ok := sc.states[s.Resource]; ok && old.ObservedAt.After(s.ObservedAt) {
		return
	}
	sc.states[s.Resource] = s
}

// record merges observations (keys complete) into the view.
func (v *view) record(states []quota.State) {
	if len(states) == 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, s := range states {
		mergeLocked(v.scopeLocked(scopeKey{s.Host, s.Principal}), s)
	}
}

// setHold makes every request to key wait until until.
func (v *view) setHold(key quota.Key, until time.Time, reason string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	sc := v.scopeLocked(scopeKey{key.Host, key.Principal})
	if h, ok := sc.holds[key.Resource]; ok && h.until.After(until) {
		return
	}
	sc.holds[key.Resource] = hold{until: until, reason: reason}
}

// block is what holds a request back.
type block struct {
	key    quota.Key
	kind   WaitKind    // WaitQuota or WaitSecondary
	quota  quota.Block // the blocking state, its cause and reserve (WaitQuota)
	until  time.Time   // the hold's end (WaitSecondary)
	reason string
}

// cause is why b holds the request back: a throttle's hold counts as
// exhausted, a quota's block says its own cause.
func (b block) cause() quota.Cause {
	if b.kind == WaitSecondary {
		return quota.CauseExhausted
	}
	return b.quota.Cause
}

// blocking returns what holds req back at now, if anything: an exhausted
// state or a throttle's hold of a resource that applies to req (the one
// that ends last), else, for a low-priority request, a state below its
// reserve (the latest reset first). Whether a state blocks is the
// policy's to say (quota.Policy.Blocks): a low-priority request is
// quota.Scheduled work, any other quota.Running.
func (v *view) blocking(k scopeKey, p *Provider, req *http.Request, charged string, now time.Time, low bool, pol *quota.Policy) (block, bool) {
	if charged == "" {
		return block{}, false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	sc := v.scopes[k]
	if sc == nil {
		return block{}, false
	}
	work := quota.Running
	if low {
		work = quota.Scheduled
	}
	var (
		wait            block
		waitAt          time.Time
		hasWait, hasRes bool
		worst           quota.Block
	)
	for res, s := range sc.states {
		if !p.applies(req, charged, res) {
			continue
		}
		if b, ok := pol.Blocks(s, now); ok && b.Holds(work) && (!hasRes || b.Outranks(worst)) {
			worst, hasRes = b, true
		}
	}
	if hasRes && worst.Cause == quota.CauseExhausted {
		wait = block{key: worst.State.Key, kind: WaitQuota, quota: worst}
		waitAt, hasWait, hasRes = worst.State.ResetAt, true, false
	}
	for res, h := range sc.holds {
		if !h.until.After(now) {
			delete(sc.holds, res)
			continue
		}
		if !p.applies(req, charged, res) {
			continue
		}
		// A hold ends at until; an exhaustion at its reset plus the
		// margin, so a hold wins only when it ends after that.
		if !hasWait || h.until.After(waitAt.Add(pol.ResetMargin)) {
			wait = block{key: quota.Key{Host: k.host, Principal: k.principal, Resource: res},
				kind: WaitSecondary, until: h.until, reason: h.reason}
			waitAt, hasWait = h.until, true
		}
	}
	switch {
	case hasWait:
		return wait, true
	case hasRes:
		return block{key: worst.State.Key, kind: WaitQuota, quota: worst}, true
	}
	return block{}, false
}

// principal returns the principal of a request to host whose credential
// has fingerprint fp ("" for none), asking the store once per token for a
// learned login. It never fails: without a store or a login the
// fingerprint principal is used.
func (v *view) principal(ctx context.Context, host, fp string) string {
	if fp == "" {
		return quota.AnonymousPrincipal
	}
	k := scopeKey{host, fp}
	v.mu.Lock()
	id := v.idents[k]
	if id != nil && id.done {
		p := id.resolved
		v.mu.Unlock()
		return p
	}
	if id == nil {
		id = &ident{looked: make(chan struct{}), resolved: "tok:" + fp}
		if v.st == nil {
			id.done = true
			close(id.looked)
		}
		v.idents[k] = id
	}
	first := !id.looking && v.st != nil
	id.looking = true
	v.mu.Unlock()
	if first {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		login, ok, err := v.st.Login(sctx, host, fp)
		cancel()
		if err != nil {
			v.log("layover: read learned login", "host", host, "err", err)
		}
		v.mu.Lock()
		if ok && login != "" {
			id.login = login
			id.resolved = login
		}
		id.done = true
		close(id.looked)
		v.mu.Unlock()
	} else {
		select {
		case <-id.looked:
		case <-ctx.Done():
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return id.resolved
}

// learnOrg records the organisation a response to the token fp named. It
// reports whether that changed the token's principal.
func (v *view) learnOrg(host, fp, org string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	id := v.idents[scopeKey{host, fp}]
	if id == nil || id.org == org {
		return false
	}
	id.org = org
	was := id.resolved
	id.resolved = cmp.Or(id.login, org)
	return id.resolved != was
}

// snapshot returns every state in the view, sorted by key.
func (v *view) snapshot() []quota.State {
	v.mu.Lock()
	var out []quota.State
	for _, sc := range v.scopes {
		for _, s := range sc.states {
			out = append(out, s)
		}
	}
	v.mu.Unlock()
	slices.SortFunc(out, func(a, b quota.State) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Principal, b.Principal), cmp.Compare(a.Resource, b.Resource))
	})
	return out
}

// keyHost returns the host that keys a request's quotas, as
// github.APIBase names it: the lowercase hostname, with ":port" when the
// port is not the scheme's default.
func keyHost(u *url.URL) string {
	h := u.Host
	plain := true
	for i := 0; i < len(h); i++ {
		if c := h[i]; c == ':' || c == '[' || 'A' <= c && c <= 'Z' {
			plain = false
			break
		}
	}
	if plain {
		return h
	}
	name := strings.ToLower(u.Hostname())
	port := u.Port()
	scheme := strings.ToLower(u.Scheme)
	if port == "" || scheme == "https" && port == "443" || scheme == "http" && port == "80" {
		return name
	}
	return net.JoinHostPort(name, port)
}

// credential returns the token a request carries, "" when none: the
// credential of an Authorization header (after "Bearer " or "token "; the
// whole value for other schemes), else x-api-key, x-goog-api-key or
// api-key, else a "key" query parameter.
func credential(req *http.Request) string {
	if v := req.Header.Get("Authorization"); v != "" {
		scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
		if ok && (strings.EqualFold(scheme, "bearer") || strings.EqualFold(scheme, "token")) {
			return strings.TrimSpace(cred)
		}
		return strings.TrimSpace(v)
	}
	for _, name := range []string{"X-Api-Key", "X-Goog-Api-Key", "Api-Key"} {
		if v := strings.TrimSpace(req.Header.Get(name)); v != "" {
			return v
		}
	}
	if req.URL != nil && strings.Contains(req.URL.RawQuery, "key=") {
		return req.URL.Query().Get("key")
	}
	return ""
}
