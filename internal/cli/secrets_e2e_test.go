package cli_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/store/postgres/pgtest"
)

// secret is one secret value of the scanner's environment.
type secret struct {
	name  string // what it stands for, in failure messages
	value string
	// shape: recognisable by its form wherever it is; the others only as a
	// value layover knows (its variable, its token, a job's --env).
	shape bool
}

// alnum returns n random letters and digits.
func alnum(n int) string {
	const set = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = set[int(b[i])%len(set)]
	}
	return string(b)
}

func hex40() string {
	b := make([]byte, 20)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// secretWorld is a bundle whose environment holds a secret of every kind
// layover must never keep or show (docs/secrets.md): GitHub tokens of every
// format, the token layover resolves being a classic 40-hex one from `gh
// auth token`; OpenAI, Anthropic and Gemini keys; a job's own variable; and
// on PostgreSQL the store URL's password.
type secretWorld struct {
	*bundle
	secrets []secret
	// byVar are the variables holding secrets, by name.
	byVar map[string]string
	// out collects everything layover printed, by where it came from.
	out []captured
}

type captured struct{ where, text string }

func newSecretWorld(t *testing.T, postgres bool) *secretWorld {
	b := setup(t, fake.GitHubConfig{})
	w := &secretWorld{bundle: b, byVar: map[string]string{}}
	add := func(name, variable, value string, shape bool) {
		w.secrets = append(w.secrets, secret{name, value, shape})
		if variable != "" {
			w.byVar[variable] = value
			b.env[variable] = value
		}
	}
	// No GH_TOKEN: the token comes from gh, in the classic 40-hex form,
	// and is known only because layover resolved it.
	delete(b.env, "GH_TOKEN")
	add("token from gh auth token (40-hex)", "FAKE_GH_AUTH_TOKEN", hex40(), false)
	add("GH_ENTERPRISE_TOKEN (40-hex)", "GH_ENTERPRISE_TOKEN", hex40(), false)
	add("classic PAT", "CLASSIC_PAT", "ghp_"+alnum(36), true)
	add("OAuth token", "OAUTH_TOKEN", "gho_"+alnum(36), true)
	add("user-to-server token", "U2S_TOKEN", "ghu_"+alnum(36), true)
	add("installation token", "APP_TOKEN", "ghs_"+alnum(36), true)
	add("refresh token", "REFRESH_TOKEN", "ghr_"+alnum(76), true)
	add("fine-grained PAT", "FINE_PAT", "github_pat_"+alnum(22)+"_"+alnum(59), true)
	add("OpenAI key", "OPENAI_API_KEY", "sk-proj-"+alnum(48), true)
	add("Anthropic key", "ANTHROPIC_API_KEY", "sk-ant-api03-"+alnum(93)+"AA", true)
	add("Gemini key", "GEMINI_API_KEY", "AIza"+alnum(35), true)
	add("Google key", "GOOGLE_API_KEY", "AIza"+alnum(35), true)
	add("a job's --env value", "DEPLOY_KEY", "deploy-"+alnum(24), false)
	if postgres {
		u, err := url.Parse(pgtest.Schema(t))
		if err != nil {
			t.Fatal(err)
		}
		pw, ok := u.User.Password()
		if !ok || len(pw) < 8 {
			// The test server trusts its clients: a password is sent and
			// never checked, so any will do.
			pw = "pg-" + alnum(20)
			u.User = url.UserPassword(u.User.Username(), pw)
		}
		add("store URL's password", "", pw, false)
		b.env["LAYOVER_STORE"] = u.String()
	}
	// The host's checkpoint files go where the scan looks.
	tmp := filepath.Join(b.dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	b.env["TMPDIR"] = tmp
	return w
}

// token is the token layover uses: the fake GitHub's bucket key.
func (w *secretWorld) token() string { return w.byVar["FAKE_GH_AUTH_TOKEN"] }

// known are the secrets a command that does not know the job's --env
// variables can know: every secret but DEPLOY_KEY's value.
func (w *secretWorld) known() []string {
	var out []string
	for _, s := range w.secrets {
		if s.value != w.byVar["DEPLOY_KEY"] {
			out = append(out, s.value)
		}
	}
	return out
}

func (w *secretWorld) all() []string {
	var out []string
	for _, s := range w.secrets {
		out = append(out, s.value)
	}
	return out
}

// layover runs a command and keeps its output for the scan.
func (w *secretWorld) layover(args ...string) result {
	w.t.Helper()
	r := w.bundle.layover(args...)
	w.keep(r, args)
	return r
}

func (w *secretWorld) keep(r result, args []string) {
	name := strings.Join(args[:min(len(args), 2)], " ")
	w.out = append(w.out, captured{name + ": stdout", r.stdout}, captured{name + ": stderr", r.stderr})
}

// The class "one secret scanner" of issue 8: every end-to-end scenario runs
// with secrets in the environment and in the command lines, and then
// everything layover wrote is scanned: every table of the store, the
// activity, serve's log, receipts, every stdout and stderr, every --json
// output, every file under the test's directory. No secret value may
// appear anywhere.
func TestSecretsNeverKeptOrShown(t *testing.T) {
	t.Parallel()
	for _, pg := range []bool{false, true} {
		name := "sqlite"
		if pg {
			name = "postgres"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newSecretWorld(t, pg)
			w.scenarios(t)
			w.scan(t, pg)
		})
	}
}

func (w *secretWorld) scenarios(t *testing.T) {
	// Command lines hold every secret run can know, each as an argument
	// the command ignores.
	cmdWith := func(script string, secrets []string) []string {
		return append([]string{"sh", "-c", script, "sh"}, secrets...)
	}
	ghCall := cmdWith("gh api /repos/octo/demo", w.known())

	// pass: admitted, then skipped on an exhausted quota.
	if r := w.layover(append([]string{"pass", "--"}, cmdWith("true", w.known())...)...); r.code != 0 {
		t.Fatalf("pass: exit %d %s", r.code, r.stderr)
	}
	w.gh.SetQuota(w.token(), "core", 0, nextSecond(time.Hour))
	if r := w.layover("pass", "--", "true"); r.code != 0 {
		t.Fatalf("skipped pass: exit %d %s", r.code, r.stderr)
	}

	// run waits on the exhausted quota, registered for status and the
	// activity log, until SIGTERM ends the wait.
	p := w.start(runArgs(nil, ghCall...)...)
	p.waitLine(t, "Quota wait until")
	w.layover("status")
	if r := w.layover("status", "--json"); !strings.Contains(r.stdout, `"command": "sh -c gh api /repos/octo/demo sh [redacted]`) {
		t.Errorf("status --json does not list the waiting run with its command masked:\n%s", r.stdout)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 143 {
		t.Fatalf("run: exit %d after SIGTERM; stderr:\n%s", code, p.stderr())
	}
	w.out = append(w.out, captured{"waiting run: stdout", p.stdout.String()}, captured{"waiting run: stderr", p.stderr()})

	// run --defer-after 0: a receipt, nothing stored.
	if r := w.layover(runArgs([]string{"--defer-after", "0s"}, ghCall...)...); r.code != 6 || !strings.Contains(r.stdout, "deferred-receipt") {
		t.Fatalf("run --defer-after 0s: exit %d %s", r.code, r.stderr)
	}

	// run --submit refuses a command that holds a secret before running it
	// (issue 8 finding 5), and stores one that holds none.
	runs := w.ghAPICalls()
	for _, s := range w.known() {
		r := w.layover(runArgs([]string{"--submit"}, cmdWith("gh api /repos/octo/demo", []string{s})...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "looks like a secret") {
			t.Errorf("run --submit with %s in the command: exit %d %q, want 2", w.nameOf(s), r.code, r.stderr)
		}
	}
	if n := w.ghAPICalls(); n != runs {
		t.Errorf("a refused run --submit ran its command (%d runs)", n-runs)
	}
	r := w.layover(runArgs([]string{"--submit"}, "gh", "api", "/repos/octo/demo")...)
	if r.code != 6 || !strings.Contains(r.stderr, "deferred as job ") {
		t.Fatalf("run --submit: exit %d %s", r.code, r.stderr)
	}
	deferred := strings.Fields(r.stderr[strings.Index(r.stderr, "deferred as job ")+len("deferred as job "):])[0]

	// submit refuses a secret in the command, the name and every hook; a
	// job's own --env value is known too.
	for i, s := range w.all() {
		r := w.layover(append([]string{"submit", "--env", "DEPLOY_KEY", "--"}, cmdWith("true", []string{s})...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "looks like a secret") {
			t.Errorf("submit with %s in the command: exit %d %q, want 2", w.nameOf(s), r.code, r.stderr)
		}
		flag := []string{"--name", "--resume-cmd", "--check-cmd", "--verify-cmd", "--plan-cmd"}[i%5]
		r = w.layover("submit", "--env", "DEPLOY_KEY", flag, "deploy "+s, "--", "true")
		if r.code != 2 || !strings.Contains(r.stderr, "looks like a secret") {
			t.Errorf("submit with %s in %s: exit %d %q, want 2", w.nameOf(s), flag, r.code, r.stderr)
		}
	}

	// serve runs jobs that print every secret they have, checkpoint, and
	// fail quoting one: the log, the reason and the checkpoint hold none.
	serve := w.start("serve", "--lease", "3s", "--heartbeat", "500ms")
	serve.waitLine(t, "layover serve started")
	if r := w.layover("adopt", deferred); r.code != 0 {
		t.Errorf("adopt: exit %d %s", r.code, r.stderr)
	}
	var vars []string
	for v := range w.byVar {
		vars = append(vars, v)
	}
	slices.Sort(vars)
	var echo strings.Builder
	envFlags := []string{"submit", "--id", "leak"}
	for _, v := range vars {
		fmt.Fprintf(&echo, "echo \"out %s=$%s\"; echo \"err %s=$%s\" >&2; ", v, v, v, v)
		if v != "FAKE_GH_AUTH_TOKEN" && v != "GH_ENTERPRISE_TOKEN" && !strings.HasSuffix(v, "_API_KEY") {
			envFlags = append(envFlags, "--env", v)
		}
	}
	script := echo.String() + `echo "store $LAYOVER_STORE"; ` +
		`layover checkpoint --stage built --data '{"step":1}' || exit 9; ` +
		`layover checkpoint --stage built --data "{\"key\":\"$DEPLOY_KEY\"}"; echo "checkpoint refused $?"`
	if r := w.layover(append(envFlags, "--", "sh", "-c", script)...); r.code != 0 {
		t.Fatalf("submit leak: exit %d %s", r.code, r.stderr)
	}
	if r := w.layover("submit", "--id", "fails", "--max-attempts", "1", "--env", "DEPLOY_KEY", "--",
		"sh", "-c", `echo "API Error: 500 internal error for $DEPLOY_KEY $FAKE_GH_AUTH_TOKEN" >&2; exit 1`); r.code != 0 {
		t.Fatalf("submit fails: exit %d %s", r.code, r.stderr)
	}
	leak := w.awaitJob("leak", "complete")
	if leak.Checkpoint == nil || leak.Checkpoint.Stage != "built" {
		t.Errorf("leak's checkpoint: %+v", leak.Checkpoint)
	}
	// The reason the store keeps quotes the job's message, masked.
	if fails := w.awaitJob("fails", "failed"); !strings.Contains(fails.Transitions[len(fails.Transitions)-1].Reason, "internal error for [redacted] [redacted]") {
		t.Errorf("fails' last transition %+v: want the quoted message masked", fails.Transitions[len(fails.Transitions)-1])
	}
	if err := serve.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := serve.wait(t); code != 0 {
		t.Errorf("serve: exit %d after SIGTERM", code)
	}
	log := serve.stderr()
	for _, want := range []string{"[leak] out DEPLOY_KEY=[redacted]", "[leak] err FAKE_GH_AUTH_TOKEN=[redacted]", "[leak] checkpoint refused 2", "[fails] API Error: 500 internal error for [redacted] [redacted]"} {
		if !strings.Contains(log, want) {
			t.Errorf("serve's log lacks %q: the job's output did not come through masked:\n%s", want, log)
		}
	}
	w.out = append(w.out, captured{"serve: stderr", log}, captured{"serve: stdout", serve.stdout.String()})

	// checkpoint refuses a secret in its data or stage, exit 2, nothing
	// stored (issue 8 finding 5).
	w.env["LAYOVER_JOB_ID"], w.env["LAYOVER_FENCE"] = "leak", "1"
	for _, s := range w.all() {
		for _, args := range [][]string{{"--stage", "built", "--data", `{"k":"` + s + `"}`}, {"--stage", "at " + s}} {
			if r := w.layover(append([]string{"checkpoint"}, args...)...); r.code != 2 || !strings.Contains(r.stderr, "looks like a secret") {
				t.Errorf("checkpoint %s with %s: exit %d %q, want 2", args[len(args)-2], w.nameOf(s), r.code, r.stderr)
			}
		}
	}
	delete(w.env, "LAYOVER_JOB_ID")
	delete(w.env, "LAYOVER_FENCE")

	// What people and programs read.
	w.layover("status")
	w.layover("status", "--json")
	w.layover("activity")
	w.layover("activity", "--json")
	w.layover("jobs")
	w.layover("jobs", "--json")
	for _, id := range []string{deferred, "leak", "fails"} {
		w.layover("show", id)
		w.layover("show", id, "--json")
	}

	// classify reads provider output that quotes secrets.
	in := t.TempDir() // not scanned: it holds the secrets on purpose
	shaped := w.shaped()
	inputs := map[string]string{
		"github.http": "HTTP/2 401\r\ncontent-type: application/json\r\n\r\n" +
			`{"message":"Bad credentials ` + strings.Join(shaped, " ") + `","documentation_url":"https://docs.github.com/rest","status":"401"}`,
		"claude.txt": `API Error: 401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + strings.Join(shaped, " ") + `"}}`,
		"bad.http":   "HTTP/1.1 4O1 " + strings.Join(shaped, " ") + "\r\n\r\n",
	}
	for file, text := range inputs {
		if err := os.WriteFile(filepath.Join(in, file), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w.layover("classify", "--provider", "github", "--http", filepath.Join(in, "github.http"))
	w.layover("classify", "--provider", "claude-code", "--exit", "1", "--stderr", filepath.Join(in, "claude.txt"))
	w.layover("classify", "--provider", "github", "--http", filepath.Join(in, "bad.http"))
}

// ghAPICalls counts the fake gh's `gh api` runs (every command that
// resolves the token also runs `gh auth token`).
func (w *secretWorld) ghAPICalls() int {
	data, _ := os.ReadFile(w.ghLog)
	return strings.Count("\n"+string(data), "\napi ")
}

// shaped are the secrets recognisable by their form.
func (w *secretWorld) shaped() []string {
	var out []string
	for _, s := range w.secrets {
		if s.shape {
			out = append(out, s.value)
		}
	}
	return out
}

func (w *secretWorld) nameOf(value string) string {
	for _, s := range w.secrets {
		if s.value == value {
			return s.name
		}
	}
	return "?"
}

// fragment is the length of a piece of a secret that counts as a leak:
// every secret here is random past its first 13 bytes, so 16 bytes of one
// are found nowhere else.
const fragment = 16

// scan looks for every secret in everything layover wrote.
func (w *secretWorld) scan(t *testing.T, pg bool) {
	texts := w.out
	if pg {
		texts = append(texts, postgresRows(t, w.env["LAYOVER_STORE"])...)
	} else {
		texts = append(texts, sqliteRows(t, w.store)...)
	}
	rows := len(texts) - len(w.out)
	masked := false
	for _, c := range texts[len(w.out):] {
		masked = masked || strings.Contains(c.text, "[redacted]")
	}
	if rows == 0 || !masked {
		t.Errorf("the store scan read %d rows, masked text in any: %v; the scan would see nothing", rows, masked)
	}
	// Every file under the test's directory: the store's files (freed
	// pages and the WAL included), the checkpoint files, HOME.
	if err := filepath.WalkDir(w.dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(path)
			texts = append(texts, captured{"file " + strings.TrimPrefix(path, w.dir), string(data)})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// A secret cut short (a quoted message, a cut tail) is a leak too: a
	// hit is any fragment of a secret, or a whole one shorter than that.
	pieces := map[string]int{}
	for i, s := range w.secrets {
		for j := 0; j+fragment <= len(s.value); j++ {
			pieces[s.value[j:j+fragment]] = i
		}
	}
	hits := 0
	for _, c := range texts {
		found := map[int]bool{}
		for i, s := range w.secrets {
			found[i] = len(s.value) < fragment && strings.Contains(c.text, s.value)
		}
		for k := 0; k+fragment <= len(c.text); k++ {
			if i, ok := pieces[c.text[k:k+fragment]]; ok && !found[i] {
				found[i] = true
				t.Errorf("%s holds the %s: …%s…", c.where, w.secrets[i].name, c.text[max(0, k-80):min(len(c.text), k+fragment+40)])
			}
		}
		for i, hit := range found {
			if hit {
				hits++
				if len(w.secrets[i].value) < fragment {
					t.Errorf("%s holds the %s", c.where, w.secrets[i].name)
				}
			}
		}
	}
	t.Logf("scanned %d outputs, store rows and files for %d secrets: %d hits", len(texts), len(w.secrets), hits)
}

// sqliteRows returns every row of every table of the SQLite store at path,
// each column as text.
func sqliteRows(t *testing.T, path string) []captured {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tables := queryStrings(t, db, "SELECT name FROM sqlite_master WHERE type = 'table'")
	var out []captured
	for _, table := range tables {
		rows, err := db.Query(`SELECT * FROM "` + table + `"`)
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		cols, _ := rows.Columns()
		for n := 0; rows.Next(); n++ {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("%s: %v", table, err)
			}
			var line strings.Builder
			for i, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				fmt.Fprintf(&line, "%s=%v\t", cols[i], v)
			}
			out = append(out, captured{fmt.Sprintf("store table %s row %d", table, n), line.String()})
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		rows.Close()
	}
	return out
}

func queryStrings(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// postgresRows returns every row of every table of the test's schema (the
// search_path of dsn), each column as the bytes the server sent.
func postgresRows(t *testing.T, dsn string) []captured {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = $1", schema)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var out []captured
	for _, table := range tables {
		rows, err := conn.Query(ctx, fmt.Sprintf(`SELECT * FROM %s.%s`, pgx.Identifier{schema}.Sanitize(), pgx.Identifier{table}.Sanitize()))
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		for n := 0; rows.Next(); n++ {
			var line strings.Builder
			for i, raw := range rows.RawValues() {
				fmt.Fprintf(&line, "%s=%s\t", rows.FieldDescriptions()[i].Name, raw)
			}
			out = append(out, captured{fmt.Sprintf("store table %s row %d", table, n), line.String()})
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
	}
	if len(tables) == 0 {
		t.Errorf("schema %s has no tables", schema)
	}
	return out
}
