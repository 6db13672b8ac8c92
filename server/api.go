package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/layoverhq/layover/internal/view"
)

func (s *Server) writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		s.log.Debug("api: write", "err", err)
	}
}

// apiError is the body of every API error: {"error": "..."}.
type apiError struct {
	Error string `json:"error"`
}

func (s *Server) apiFail(w http.ResponseWriter, code int, msg string) {
	s.writeJSON(w, code, apiError{Error: msg})
}

func (s *Server) apiStoreFailed(w http.ResponseWriter, r *http.Request, err error) {
	code := status(err)
	if code == 500 {
		s.log.Error("api: read store", "path", r.URL.Path, "err", err)
		s.apiFail(w, code, "the store could not be read; the server's log says why")
		return
	}
	s.apiFail(w, code, "not found")
}

// apiQuotas is [view.Quota], as status --json's "quota".
func (s *Server) apiQuotas(w http.ResponseWriter, r *http.Request) {
	_, views, err := s.quotas(r.Context(), s.cfg.Clock.Now(), false)
	if err != nil {
		s.apiStoreFailed(w, r, err)
		return
	}
	s.writeJSON(w, 200, views)
}

// waitsJSON is /api/v1/waits: the keys that hold scheduled work back, the
// deferred jobs, soonest wake-up first, and the waiting commands.
type waitsJSON struct {
	Keys     []view.Quota  `json:"keys"`
	Deferred []view.Job    `json:"deferred"`
	Waiting  []view.Waiter `json:"waiting"`
}

func (s *Server) apiWaits(w http.ResponseWriter, r *http.Request) {
	ws, err := s.waits(r.Context(), s.cfg.Clock.Now())
	if err != nil {
		s.apiStoreFailed(w, r, err)
		return
	}
	out := waitsJSON{Keys: []view.Quota{}, Deferred: []view.Job{}, Waiting: view.Waiters(ws.Waiting)}
	for _, k := range ws.Keys {
		out.Keys = append(out.Keys, k.Quota)
	}
	for _, j := range ws.Deferred {
		out.Deferred = append(out.Deferred, view.NewJob(j))
	}
	s.writeJSON(w, 200, out)
}

// jobsJSON is /api/v1/jobs: one page of jobs --json's objects, with the
// page number (from 1), the page count and the jobs matching in all.
type jobsJSON struct {
	Jobs     []view.Job `json:"jobs"`
	Page     int        `json:"page"`
	Pages    int        `json:"pages"`
	PageSize int        `json:"page_size"`
	Total    int        `json:"total"`
}

func (s *Server) apiJobs(w http.ResponseWriter, r *http.Request) {
	q, err := parseJobQuery(r.URL.Query())
	if err != nil {
		s.apiFail(w, 400, err.Error())
		return
	}
	p, err := s.listJobs(r.Context(), q)
	if err != nil {
		s.apiStoreFailed(w, r, err)
		return
	}
	out := jobsJSON{Jobs: []view.Job{}, Page: q.Page, Pages: p.Pages, PageSize: PageSize, Total: p.Total}
	for _, j := range p.Jobs {
		out.Jobs = append(out.Jobs, view.NewJob(j))
	}
	s.writeJSON(w, 200, out)
}

// apiJob is show --json's object.
func (s *Server) apiJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	j, err := s.cfg.Store.Job(r.Context(), id)
	if err != nil {
		s.apiStoreFailed(w, r, err)
		return
	}
	hist, err := s.cfg.Store.JobHistory(r.Context(), id)
	if err != nil {
		s.apiStoreFailed(w, r, err)
		return
	}
	s.writeJSON(w, 200, view.NewJobDetail(j, hist))
}

// apiRuns is flow status --json's object.
func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	_, out, err := s.runs(r.Context())
	if err != nil {
		s.apiStoreFailed(w, r, err)
		return
	}
	s.writeJSON(w, 200, out)
}

// apiRun is flow status RUN --json's object.
func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	d, err := s.run(r.Context(), r.PathValue("id"))
	if err != nil {
		s.apiStoreFailed(w, r, err)
		return
	}
	s.writeJSON(w, 200, d.View)
}

// apiHosts is [view.Host], as status --json's "hosts".
func (s *Server) apiHosts(w http.ResponseWriter, r *http.Request) {
	hs, err := s.cfg.Store.Hosts(r.Context())
	if err != nil {
		s.apiStoreFailed(w, r, err)
		return
	}
	s.writeJSON(w, 200, view.Hosts(hs, s.cfg.Clock.Now()))
}

// apiSchedule is one schedule as /api/v1/schedules gives it (the shape of
// layover schedule list --json).
type apiSchedule struct {
	Name     string   `json:"name"`
	Cron     string   `json:"cron"`
	TZ       string   `json:"tz"`
	Command  []string `json:"command"`
	Quota    []string `json:"quota"`
	NextSlot *string  `json:"next_slot"`
	LastSlot *apiSlot `json:"last_slot"`
	Error    string   `json:"error,omitempty"`
}

type apiSlot struct {
	At     string `json:"at"`
	Result string `json:"result"`
	Detail string `json:"detail"`
	Late   bool   `json:"late"`
	Host   string `json:"host"`
}

// apiSchedules is [apiSchedule], ordered by name.
func (s *Server) apiSchedules(w http.ResponseWriter, r *http.Request) {
	rows, err := s.schedules(r.Context(), s.cfg.Clock.Now())
	if err != nil {
		s.apiStoreFailed(w, r, err)
		return
	}
	out := []apiSchedule{}
	for _, row := range rows {
		a := apiSchedule{Name: row.Name, Cron: row.Cron, TZ: row.TZ, Command: row.Argv, Quota: row.Quota, Error: row.Error}
		if a.Command == nil {
			a.Command = []string{}
		}
		if a.Quota == nil {
			a.Quota = []string{}
		}
		if !row.Next.IsZero() {
			next := row.Next.UTC().Format(time.RFC3339)
			a.NextSlot = &next
		}
		if row.HasLast {
			a.LastSlot = &apiSlot{At: row.Last.At.UTC().Format(time.RFC3339), Result: string(row.Last.Result),
				Detail: row.Last.Detail, Late: row.Last.Late, Host: row.Last.HostID}
		}
		out = append(out, a)
	}
	s.writeJSON(w, 200, out)
}

// bearer is the token of an "Authorization: Bearer T" header, ok false
// without one.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return h[len(prefix):], true
}

// apiAction performs action with the bearer token; it answers with the
// job's show object after it.
// bearerAllowed reports whether an API action may act: actions are on
// and r carries the token as a bearer. When not, it has answered 401 or
// 403.
func (s *Server) bearerAllowed(w http.ResponseWriter, r *http.Request) bool {
	if !s.actions {
		s.apiFail(w, http.StatusForbidden, "actions are off: layover serve was started without --token-file")
		return false
	}
	tok, ok := bearer(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="layover"`)
		s.apiFail(w, http.StatusUnauthorized, "this action needs Authorization: Bearer with the console token")
		return false
	}
	if wait, ok := s.tooManyWrong(r); ok {
		w.Header().Set("Retry-After", fmt.Sprint(int(wait.Seconds())+1))
		s.apiFail(w, http.StatusTooManyRequests, fmt.Sprintf("too many wrong tokens: try again in %s", wait))
		return false
	}
	if !s.tokenMatches(r, tok) {
		s.log.Warn("api: action refused: wrong token", "path", r.URL.Path, "remote", r.RemoteAddr)
		s.apiFail(w, http.StatusForbidden, "wrong token")
		return false
	}
	return true
}

func (s *Server) apiAction(action string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.bearerAllowed(w, r) {
			return
		}
		id := r.PathValue("id")
		if _, err := s.act(r, action, id); err != nil {
			code, msg := actionError(action, id, err)
			if code == 500 {
				s.log.Error("api: "+action, "job", id, "err", err)
			}
			s.apiFail(w, code, msg)
			return
		}
		s.apiJob(w, r) // the job after the action, as GET answers it
	}
}

// apiRunCancel cancels a run as flow cancel does and answers with the run's
// flow status RUN --json object after it.
func (s *Server) apiRunCancel(w http.ResponseWriter, r *http.Request) {
	if !s.bearerAllowed(w, r) {
		return
	}
	id := r.PathValue("id")
	if code, msg, err := s.cancelRun(r, id); err != nil {
		s.apiFail(w, code, msg)
		return
	}
	d, err := s.run(r.Context(), id)
	if err != nil {
		s.apiStoreFailed(w, r, err)
		return
	}
	s.writeJSON(w, 200, d.View)
}
