package server

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/internal/view"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/textsafe"
	"github.com/layoverhq/layover/workflow"
	"github.com/layoverhq/layover/workflow/record"
)

//go:embed templates static
var assets embed.FS

// maxCell bounds text from outside layover (a provider's, a command line,
// a stage) in a page: one line of at most this many bytes; html/template
// escapes it.
const maxCell = 200

// maxReceipt bounds a receipt's JSON shown on a job's page, in bytes.
const maxReceipt = 4000

var pageNames = []string{"quotas", "waits", "jobs", "job", "runs", "run", "hosts", "schedules", "login", "error"}

func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"text": func(s string) string { return textsafe.Line(s, maxCell) },
		"time": func(t time.Time) string {
			if t.IsZero() {
				return "-"
			}
			return t.UTC().Format("2006-01-02 15:04:05 UTC")
		},
		"rel":   relative,
		"count": func(n int64) string { return countText(n) },
		"argv":  func(a []string) string { return textsafe.Line(strings.Join(a, " "), maxCell) },
		"add":   func(a, b int) int { return a + b },
		"deref": func(p *int) string {
			if p == nil {
				return "-"
			}
			return fmt.Sprint(*p)
		},
		"receipt": func(b []byte) string {
			var out bytes.Buffer
			if json.Indent(&out, b, "", "  ") != nil {
				return "(not JSON)"
			}
			if out.Len() > maxReceipt {
				return out.String()[:maxReceipt] + "\n…"
			}
			return out.String()
		},
	}
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("server: page %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

func countText(n int64) string {
	if n < 0 {
		return "unknown"
	}
	return fmt.Sprint(n)
}

// relative is t from now for a person: "in 1h0m0s", "5m0s ago".
func relative(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := t.Sub(now).Round(time.Second)
	switch {
	case d > 0:
		return "in " + d.String()
	case d < 0:
		return (-d).String() + " ago"
	}
	return "now"
}

// page is what every page template gets: Data is the page's own.
type page struct {
	Title    string
	Nav      string
	Now      time.Time
	Actions  bool   // the token is set: actions are possible
	LoggedIn bool   // this request carries the session
	CSRF     string // the forms' CSRF token, only when logged in
	Data     any
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name, title string, data any) {
	session, loggedIn := s.loggedIn(r)
	p := page{Title: title, Nav: name, Now: s.cfg.Clock.Now(), Actions: s.actions, LoggedIn: loggedIn, Data: data}
	if loggedIn {
		p.CSRF = s.sessions.csrf(session)
	}
	var b bytes.Buffer
	if err := s.pages[name].Execute(&b, p); err != nil {
		s.log.Error("console: render", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// fail renders the error page with code and a message layover wrote.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	s.render(w, r, code, "error", http.StatusText(code), msg)
}

// storeFailed logs a store error and answers 404 or 500 without its text.
func (s *Server) storeFailed(w http.ResponseWriter, r *http.Request, err error) {
	code := status(err)
	if code == 500 {
		s.log.Error("console: read store", "path", r.URL.Path, "err", err)
		s.fail(w, r, code, "The store could not be read; the server's log says why.")
		return
	}
	s.fail(w, r, code, "Not found.")
}

func (s *Server) quotasPage(w http.ResponseWriter, r *http.Request) {
	rows, _, err := s.quotas(r.Context(), s.cfg.Clock.Now(), true)
	if err != nil {
		s.storeFailed(w, r, err)
		return
	}
	s.render(w, r, 200, "quotas", "Quotas", rows)
}

func (s *Server) waitsPage(w http.ResponseWriter, r *http.Request) {
	ws, err := s.waits(r.Context(), s.cfg.Clock.Now())
	if err != nil {
		s.storeFailed(w, r, err)
		return
	}
	s.render(w, r, 200, "waits", "Quota waits", ws)
}

// jobsData is the jobs page: a page of jobs, the states to filter by and
// the links to the pages before and after.
type jobsData struct {
	jobPage
	States     []job.State
	Prev, Next string
}

func (s *Server) jobsPage(w http.ResponseWriter, r *http.Request) {
	q, err := parseJobQuery(r.URL.Query())
	if err != nil {
		s.fail(w, r, 400, err.Error())
		return
	}
	p, err := s.listJobs(r.Context(), q)
	if err != nil {
		s.storeFailed(w, r, err)
		return
	}
	d := jobsData{jobPage: p, States: job.States}
	if q.Page > 1 {
		d.Prev = "/jobs?" + q.values(q.Page-1).Encode()
	}
	if q.Page < p.Pages {
		d.Next = "/jobs?" + q.values(q.Page+1).Encode()
	}
	s.render(w, r, 200, "jobs", "Jobs", d)
}

// jobData is one job's page.
type jobData struct {
	Job     job.Job
	History job.History
	Owners  []view.ReceiptOwner
	// Can names the actions the job's state allows.
	Can map[string]bool
}

func (s *Server) oneJobPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	j, err := s.cfg.Store.Job(r.Context(), id)
	if err != nil {
		s.storeFailed(w, r, err)
		return
	}
	hist, err := s.cfg.Store.JobHistory(r.Context(), id)
	if err != nil {
		s.storeFailed(w, r, err)
		return
	}
	d := jobData{Job: j, History: hist.WithWaits(), Can: allowed(j)}
	for _, rc := range hist.Receipts {
		if o, ok := view.NewReceiptOwner(j.ID, rc); ok {
			d.Owners = append(d.Owners, o)
		}
	}
	s.render(w, r, 200, "job", "Job "+textsafe.Line(j.ID, maxCell), d)
}

// allowed names the actions that j's state allows.
func allowed(j job.Job) map[string]bool {
	ended := j.State.Terminal()
	return map[string]bool{
		"cancel":  !ended,
		"approve": !ended && j.Spec.FreshApprovalRequired && !j.Approved,
		"unblock": j.State == job.Blocked || j.State == job.AuthWait,
	}
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) {
	rows, _, err := s.runs(r.Context())
	if err != nil {
		s.storeFailed(w, r, err)
		return
	}
	s.render(w, r, 200, "runs", "Workflow runs", rows)
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	d, err := s.run(r.Context(), r.PathValue("id"))
	if err != nil {
		s.storeFailed(w, r, err)
		return
	}
	s.render(w, r, 200, "run", "Run "+textsafe.Line(d.Run.ID, maxCell), d)
}

func (s *Server) hostsPage(w http.ResponseWriter, r *http.Request) {
	rows, err := s.hosts(r.Context(), s.cfg.Clock.Now())
	if err != nil {
		s.storeFailed(w, r, err)
		return
	}
	s.render(w, r, 200, "hosts", "Hosts", rows)
}

func (s *Server) schedulesPage(w http.ResponseWriter, r *http.Request) {
	rows, err := s.schedules(r.Context(), s.cfg.Clock.Now())
	if err != nil {
		s.storeFailed(w, r, err)
		return
	}
	s.render(w, r, 200, "schedules", "Schedules", rows)
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, 200, "login", "Log in", "")
}

// maxForm bounds a form's body, in bytes.
const maxForm = 4096

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if !s.actions {
		s.fail(w, r, http.StatusForbidden, "Actions are off: layover serve was started without --token-file.")
		return
	}
	if !sameOrigin(r) {
		s.log.Warn("console: login refused: posted from another site", "remote", r.RemoteAddr)
		s.fail(w, r, http.StatusForbidden, "A login must be posted from the console's own page.")
		return
	}
	if wait, ok := s.tooManyWrong(r); ok {
		w.Header().Set("Retry-After", fmt.Sprint(int(wait.Seconds())+1))
		s.render(w, r, http.StatusTooManyRequests, "login", "Log in", fmt.Sprintf("Too many wrong tokens: try again in %s.", wait))
		return
	}
	if !s.tokenMatches(r, r.PostFormValue("token")) {
		s.log.Warn("console: login refused: wrong token", "remote", r.RemoteAddr)
		s.render(w, r, http.StatusForbidden, "login", "Log in", "That is not the console token.")
		return
	}
	session, err := s.sessions.open(s.cfg.Clock.Now())
	if err != nil {
		s.log.Error("console: login: open a session", "err", err)
		s.fail(w, r, http.StatusInternalServerError, "The session could not be opened.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: session, Path: "/", MaxAge: int(sessionLifetime.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/jobs", http.StatusSeeOther)
}

// sameOrigin reports whether r may come from the console's own page: a
// browser that says where a POST came from must name no other site
// (Sec-Fetch-Site neither cross-site nor same-site; an Origin, when not
// "null", whose host is r's Host), so another site cannot log a visitor
// in under its own session (login CSRF). Origin "null", which a browser
// sends for the console's own form under Referrer-Policy no-referrer, is
// taken only with Sec-Fetch-Site. A client that sends neither header,
// e.g. curl, is not refused.
func sameOrigin(r *http.Request) bool {
	site := r.Header.Get("Sec-Fetch-Site")
	if site == "cross-site" || site == "same-site" {
		return false
	}
	switch origin := r.Header.Get("Origin"); origin {
	case "":
		return true
	case "null":
		return site != ""
	default:
		u, err := url.Parse(origin)
		return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
	}
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	session, ok := s.loggedIn(r)
	if !ok || !s.csrfMatches(r, session) {
		s.fail(w, r, http.StatusForbidden, "Not logged in, or the form is stale: reload the page.")
		return
	}
	s.sessions.end(session)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

var actionNames = []string{"cancel", "approve", "unblock"}

// act performs action on job id through host.Jobs.
func (s *Server) act(r *http.Request, action, id string) (job.Job, error) {
	var (
		j   job.Job
		err error
	)
	switch action {
	case "cancel":
		j, err = s.cfg.Jobs.Cancel(r.Context(), id)
	case "approve":
		j, err = s.cfg.Jobs.Approve(r.Context(), id)
	case "unblock":
		j, err = s.cfg.Jobs.Unblock(r.Context(), id)
	default:
		return job.Job{}, errors.New("no such action")
	}
	s.log.Info("console: "+action, "job", id, "remote", r.RemoteAddr, "ok", err == nil)
	return j, err
}

// actionError is what a refused action tells its user: layover's words,
// not the store's.
func actionError(action, id string, err error) (int, string) {
	switch code := status(err); code {
	case 404:
		return code, fmt.Sprintf("No job %q.", textsafe.Line(id, maxCell))
	case 409:
		return code, fmt.Sprintf("Job %s cannot be %s in its state.", textsafe.Line(id, maxCell), pastTense[action])
	}
	if !host.ValidID(id) {
		return 404, fmt.Sprintf("No job %q.", textsafe.Line(id, maxCell))
	}
	return 500, "The action failed; the server's log says why."
}

var pastTense = map[string]string{"cancel": "cancelled", "approve": "approved", "unblock": "unblocked"}

// formAllowed reports whether a console form's POST may act: actions are
// on, r carries the session and the form's CSRF token. When not, it has
// answered 403.
func (s *Server) formAllowed(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	session, loggedIn := s.loggedIn(r)
	switch {
	case !s.actions:
		s.fail(w, r, http.StatusForbidden, "Actions are off: layover serve was started without --token-file.")
	case !loggedIn:
		s.fail(w, r, http.StatusForbidden, "Log in with the console token to act on jobs and runs.")
	case !s.csrfMatches(r, session):
		s.fail(w, r, http.StatusForbidden, "The form is stale or came from elsewhere: reload the page and try again.")
	default:
		return true
	}
	return false
}

func (s *Server) pageAction(action string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.formAllowed(w, r) {
			return
		}
		id := r.PathValue("id")
		if _, err := s.act(r, action, id); err != nil {
			code, msg := actionError(action, id, err)
			if code == 500 {
				s.log.Error("console: "+action, "job", id, "err", err)
			}
			s.fail(w, r, code, msg)
			return
		}
		http.Redirect(w, r, "/jobs/"+url.PathEscape(id), http.StatusSeeOther)
	}
}

// cancelRun cancels run id as layover flow cancel does (workflow.Cancel).
func (s *Server) cancelRun(r *http.Request, id string) (int, string, error) {
	n, err := workflow.Cancel(r.Context(), s.cfg.Store, s.cfg.Jobs, id, s.cfg.Clock.Now())
	s.log.Info("console: cancel run", "run", id, "remote", r.RemoteAddr, "ok", err == nil, "tasks", n)
	switch {
	case err == nil:
		return 200, "", nil
	case errors.Is(err, job.ErrNotFound):
		return 404, fmt.Sprintf("No run %q.", textsafe.Line(id, maxCell)), err
	case errors.Is(err, workflow.ErrCancelRefused), errors.Is(err, record.ErrConflict):
		return 409, textsafe.Line(fmt.Sprintf("Run %s is not cancelled: %v.", id, err), maxCell), err
	}
	s.log.Error("console: cancel run", "run", id, "err", err)
	return 500, "The cancel failed; the server's log says why.", err
}

func (s *Server) pageRunCancel(w http.ResponseWriter, r *http.Request) {
	if !s.formAllowed(w, r) {
		return
	}
	id := r.PathValue("id")
	if code, msg, err := s.cancelRun(r, id); err != nil {
		s.fail(w, r, code, msg)
		return
	}
	http.Redirect(w, r, "/runs/"+url.PathEscape(id), http.StatusSeeOther)
}
