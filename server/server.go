// Package server serves layover's web console and JSON API (docs/console.md):
// server-rendered pages of quotas, Quota waits, jobs, workflow runs and
// hosts, the same objects as JSON under /api/v1/ (package internal/view),
// /healthz, and, when given, the metrics handler at /metrics. The actions
// (cancel, approve, unblock) need the console token: a login that sets a
// session cookie plus a CSRF token on each form, or a bearer header for the
// API. The token never appears in a page, a log line or an error.
package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// Config is what a Server reads and acts through.
type Config struct {
	// Store is read for every page; required.
	Store store.Store
	// Jobs performs the actions on jobs (Cancel, Approve, Unblock) and
	// cancels a durable run's jobs when the run is cancelled; required.
	Jobs *host.Jobs
	// Clock gives "now" for liveness, waits and resets; nil: the real clock.
	Clock clock.Clock
	// Token is the console token the actions need; "" turns the actions
	// off (every action is refused with 403).
	Token string
	// Policy judges below-reserve on the quota page; the zero Policy is
	// quota.DefaultPolicy().
	Policy quota.Policy
	// Metrics, when non-nil, is served at /metrics.
	Metrics http.Handler
	// Alive reports whether the host's loop runs; nil counts as alive.
	// /healthz answers 200 while it is true and the store answers.
	Alive func() bool
	// WaiterAlive, when non-nil, leaves out the waiting commands it reports
	// gone (a process killed without unregistering).
	WaiterAlive func(store.Waiter) bool
	// Logger logs actions and failures; nil: slog.Default().
	Logger *slog.Logger
	// LoopbackOnly says the console listens on a loopback address only.
	// Each request must then name this machine in its Host header
	// (localhost, 127.0.0.1 or [::1], any port), else it is answered 421:
	// a page of another site whose name an attacker points at 127.0.0.1
	// (DNS rebinding) reads nothing.
	LoopbackOnly bool
}

// Server is the console and API over one store. Safe for concurrent use.
type Server struct {
	cfg   Config
	log   *slog.Logger
	pages map[string]*template.Template
	mux   *http.ServeMux
	// tokenSum is the SHA-256 of the token, compared in constant time with
	// that of what a request presents; the token itself is not kept.
	tokenSum [sha256.Size]byte
	actions  bool
	// sessions are the logins' sessions: kept in memory, so a restart
	// logs everyone out.
	sessions *sessions
	wrong    wrongTokens
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("server: Store is required")
	}
	if cfg.Jobs == nil {
		return nil, errors.New("server: Jobs is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Policy.UnknownReset == 0 {
		cfg.Policy = quota.DefaultPolicy()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, actions: cfg.Token != ""}
	if s.actions {
		s.tokenSum = sha256.Sum256([]byte(cfg.Token))
	}
	s.cfg.Token = ""
	ss, err := newSessions()
	if err != nil {
		return nil, err
	}
	s.sessions = ss
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	s.pages = pages
	s.routes()
	return s, nil
}

// Handler is the console, the API, /healthz and /metrics, every response
// with the security headers.
func (s *Server) Handler() http.Handler {
	var h http.Handler = s.mux
	if s.cfg.LoopbackOnly {
		h = loopbackHostOnly(h)
	}
	return securityHeaders(h)
}

// loopbackHostOnly answers 421 Misdirected Request to a request whose Host
// header names anything but this machine (loopbackHost).
func loopbackHostOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			http.Error(w, "this console answers only to localhost, 127.0.0.1 and [::1]", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether hostport, a Host header, is localhost,
// 127.0.0.1 or [::1], with or without a port.
func loopbackHost(hostport string) bool {
	name := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		name = h
	} else if strings.HasPrefix(name, "[") && strings.HasSuffix(name, "]") {
		name = name[1 : len(name)-1]
	}
	return strings.EqualFold(name, "localhost") || name == "127.0.0.1" || name == "::1"
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.quotasPage)
	m.HandleFunc("GET /waits", s.waitsPage)
	m.HandleFunc("GET /jobs", s.jobsPage)
	m.HandleFunc("GET /jobs/{id}", s.oneJobPage)
	m.HandleFunc("GET /runs", s.runsPage)
	m.HandleFunc("GET /runs/{id}", s.runPage)
	m.HandleFunc("GET /hosts", s.hostsPage)
	m.HandleFunc("GET /schedules", s.schedulesPage)
	m.HandleFunc("GET /login", s.loginPage)
	m.HandleFunc("POST /login", s.login)
	m.HandleFunc("POST /logout", s.logout)
	for _, a := range actionNames {
		m.HandleFunc("POST /jobs/{id}/"+a, s.pageAction(a))
		m.HandleFunc("POST /api/v1/jobs/{id}/"+a, s.apiAction(a))
	}
	m.HandleFunc("POST /runs/{id}/cancel", s.pageRunCancel)
	m.HandleFunc("POST /api/v1/runs/{id}/cancel", s.apiRunCancel)
	m.HandleFunc("GET /api/v1/quotas", s.apiQuotas)
	m.HandleFunc("GET /api/v1/waits", s.apiWaits)
	m.HandleFunc("GET /api/v1/jobs", s.apiJobs)
	m.HandleFunc("GET /api/v1/jobs/{id}", s.apiJob)
	m.HandleFunc("GET /api/v1/runs", s.apiRuns)
	m.HandleFunc("GET /api/v1/runs/{id}", s.apiRun)
	m.HandleFunc("GET /api/v1/hosts", s.apiHosts)
	m.HandleFunc("GET /api/v1/schedules", s.apiSchedules)
	m.HandleFunc("GET /healthz", s.healthz)
	static, _ := fs.Sub(assets, "static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	if s.cfg.Metrics != nil {
		m.Handle("GET /metrics", s.cfg.Metrics)
	}
	s.mux = m
}

// contentSecurityPolicy allows the console's own stylesheet and forms and
// nothing else: no script at all, no framing, no other origin.
const contentSecurityPolicy = "default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' data:; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// tokenMatches reports, in constant time, whether got, presented by r, is
// the token. Always false when the actions are off. A wrong token is
// counted against r's client (wrongTokens).
func (s *Server) tokenMatches(r *http.Request, got string) bool {
	sum := sha256.Sum256([]byte(got))
	ok := s.actions && subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1
	if !ok {
		s.wrong.wrong(clientOf(r), s.cfg.Clock.Now())
	}
	return ok
}

// tooManyWrong reports whether r's tokens are refused now, after too many
// wrong ones from its client or from all, and how long for.
func (s *Server) tooManyWrong(r *http.Request) (time.Duration, bool) {
	now := s.cfg.Clock.Now()
	until, ok := s.wrong.blocked(clientOf(r), now)
	return until.Sub(now).Round(time.Second), ok
}

const sessionCookie = "layover_session"

// loggedIn returns the session r's cookie names, if it is open.
func (s *Server) loggedIn(r *http.Request) (session string, ok bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || !s.actions || !s.sessions.valid(c.Value, s.cfg.Clock.Now()) {
		return "", false
	}
	return c.Value, true
}

// csrfMatches reports whether r's form carries session's CSRF token.
func (s *Server) csrfMatches(r *http.Request, session string) bool {
	return subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.sessions.csrf(session))) == 1
}

// healthz is 200 while the store answers (within 2 s) and the loop is
// alive, else 503.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if _, err := s.cfg.Store.CountJobs(ctx); err != nil {
		s.log.Warn("healthz: the store does not answer", "err", err)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("store unavailable\n"))
		return
	}
	if s.cfg.Alive != nil && !s.cfg.Alive() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("host loop stopped\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}
