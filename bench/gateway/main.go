// Command gateway measures what layover's gateway (package gateway) costs a
// request on loopback, against a minimal upstream that answers at once.
//
// Everything runs in this one process: the upstream (a bare net/http
// handler speaking Anthropic's Messages shape and limit headers), the
// gateway (gateway.New on a SQLite store in a temporary folder, served by
// net/http on 127.0.0.1) and the clients. Each figure is measured direct (to
// the upstream) and through the gateway, side by side, in -rounds rounds;
// the report gives each round's figure and their median.
//
//   - latency: -n sequential non-streaming requests on one kept-alive
//     connection; p50 and p99, and the gateway's added p50/p99 (gateway's
//     percentile minus direct's).
//
//   - first byte: -n/4 sequential streamed requests; the time from sending
//     to the first body byte, p50.
//
//   - throughput: -conc clients for -dur, requests per second, the process
//     on GOMAXPROCS 2.
//
//   - streams: -streams streamed requests held open through the gateway at
//     once (each has read its first event): this process's VmRSS from
//     /proc/self/status, which counts the clients and the upstream as well
//     as the in-process gateway; then the same through the real binary,
//     `layover gateway` (built to a temporary folder), and its own VmRSS
//     from /proc/PID/status.
//
//   - exhausted key: an upstream that answers its first call 429 with a
//     reset 2 s ahead, then 20 clients at once on that key, through a
//     gateway whose policy has no reset margin or jitter: the upstream
//     calls before the reset (target 0) and in the first second after the
//     first one after it (target: at most the resume rate,
//     gateway.DefaultResumeRate).
//
//     go run ./bench/gateway
//     go run ./bench/gateway -rounds 5 -n 20000 -streams 1000
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/layoverhq/layover/bench/internal/benchkit"
	"github.com/layoverhq/layover/gateway"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store/sqlite"
)

type options struct {
	rounds, n, conc, streams int
	dur                      time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.rounds, "rounds", 3, "rounds of every measurement")
	flag.IntVar(&o.n, "n", 5000, "sequential requests per latency measurement")
	flag.IntVar(&o.conc, "conc", 32, "concurrent clients of the throughput measurement")
	flag.IntVar(&o.streams, "streams", 1000, "streams held open at once")
	flag.DurationVar(&o.dur, "dur", 3*time.Second, "length of each throughput measurement")
	flag.Parse()
	runtime.GOMAXPROCS(2)
	fmt.Printf("gateway bench: %d rounds, GOMAXPROCS %d, load %s\n", o.rounds, runtime.GOMAXPROCS(0), benchkit.Uptime())

	up := &upstream{release: make(chan struct{})}
	upURL := serve(up)
	dir, err := os.MkdirTemp("", "gwbench")
	if err != nil {
		benchkit.Fail("temp dir: %v", err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "layover.db"))
	if err != nil {
		benchkit.Fail("store: %v", err)
	}
	defer st.Close()
	g, err := gateway.New(gateway.Options{Upstreams: map[string]string{gateway.Anthropic: upURL}, Store: st})
	if err != nil {
		benchkit.Fail("gateway: %v", err)
	}
	defer g.Close()
	gwURL := serve(g) + "/anthropic"

	var lat [2][4][]time.Duration // [direct, gateway][p50, p99, first byte p50, rps as Duration ns]
	var rps [2][]float64
	for r := range o.rounds {
		for i, base := range []string{upURL, gwURL} {
			p50, p99 := latency(base, o.n)
			lat[i][0] = append(lat[i][0], p50)
			lat[i][1] = append(lat[i][1], p99)
			lat[i][2] = append(lat[i][2], firstByte(base, max(o.n/4, 100)))
			rps[i] = append(rps[i], throughput(base, o.conc, o.dur))
		}
		fmt.Printf("round %d: direct p50 %s p99 %s ttfb %s %.0f req/s | gateway p50 %s p99 %s ttfb %s %.0f req/s\n", r+1,
			us(lat[0][0][r]), us(lat[0][1][r]), us(lat[0][2][r]), rps[0][r],
			us(lat[1][0][r]), us(lat[1][1][r]), us(lat[1][2][r]), rps[1][r])
	}
	fmt.Println()
	fmt.Printf("%-24s %12s %12s %12s\n", "median of rounds", "direct", "gateway", "added")
	names := []string{"latency p50", "latency p99", "first streamed byte p50"}
	for k, name := range names {
		d, gw := median(lat[0][k]), median(lat[1][k])
		fmt.Printf("%-24s %12s %12s %12s\n", name, us(d), us(gw), us(gw-d))
	}
	fmt.Printf("%-24s %12.0f %12.0f\n", "requests/s", medianF(rps[0]), medianF(rps[1]))

	for r := range o.rounds {
		rss, heap := holdStreams(gwURL, up, o.streams, "self")
		fmt.Printf("streams round %d: %d held open through the in-process gateway: VmRSS %s (the whole process: clients, gateway, upstream), Go heap in use %s\n",
			r+1, o.streams, benchkit.MB(rss), benchkit.MB(int64(heap/1024)))
	}
	bin := filepath.Join(dir, "layover")
	benchkit.Build(bin, "./cmd/layover")
	for r := range o.rounds {
		addr, pid, stop := startBinary(bin, filepath.Join(dir, fmt.Sprintf("bin%d.db", r)), upURL)
		rss, _ := holdStreams("http://"+addr+"/anthropic", up, o.streams, strconv.Itoa(pid))
		stop()
		fmt.Printf("streams round %d: %d held open through `layover gateway` (the real binary): its VmRSS %s\n",
			r+1, o.streams, benchkit.MB(rss))
	}
	for r := range o.rounds {
		before, first, total, statuses := exhaustedKey()
		fmt.Printf("exhausted key round %d: 20 clients: %d upstream calls before the reset, %d in the first second after it (resume rate %.0f/s), %d in all; the clients' statuses %v\n",
			r+1, before, first, gateway.DefaultResumeRate, total, statuses)
	}
	fmt.Printf("load after: %s\n", benchkit.Uptime())
}

// serve serves h on a loopback port and returns its URL.
func serve(h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		benchkit.Fail("listen: %v", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String()
}

// upstream is the minimal Anthropic upstream: a success with the limit
// headers at once; a streamed request ("stream" in the query) gets its
// first event flushed, then, with "hold", waits for release before the rest.
type upstream struct {
	mu      sync.Mutex
	release chan struct{}
}

const okBody = `{"id":"msg_b","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	h := w.Header()
	h.Set("anthropic-organization-id", "org-bench")
	h.Set("anthropic-ratelimit-requests-limit", "1000000")
	h.Set("anthropic-ratelimit-requests-remaining", "999999")
	h.Set("anthropic-ratelimit-requests-reset", time.Now().Add(time.Minute).UTC().Format(time.RFC3339))
	q := r.URL.Query()
	if !q.Has("stream") {
		h.Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, okBody)
		return
	}
	h.Set("Content-Type", "text/event-stream")
	_, _ = io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\"}\n\n")
	_ = http.NewResponseController(w).Flush()
	if q.Has("hold") {
		u.mu.Lock()
		rel := u.release
		u.mu.Unlock()
		select {
		case <-rel:
		case <-r.Context().Done():
			return
		}
	}
	_, _ = io.WriteString(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, DisableCompression: true}}

func post(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"model":"m","max_tokens":1,"messages":[]}`))
	if err != nil {
		return nil, err
	}
	req.Header.Set("x-api-key", "sk-bench")
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("Content-Type", "application/json")
	return client.Do(req)
}

// call sends one request, reads its answer whole and returns its status;
// a request that fails is what ends the run, as what.
func call(url, what string) int {
	resp, err := post(context.Background(), url)
	if err != nil {
		benchkit.Fail("%s: %v", what, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// callOK is call of a request that must be answered 200.
func callOK(url string) {
	if status := call(url, "request"); status != 200 {
		benchkit.Fail("request: status %d", status)
	}
}

// latency is the p50 and p99 of n sequential requests (after a warm-up).
func latency(base string, n int) (time.Duration, time.Duration) {
	url := base + "/v1/messages"
	for range 100 {
		callOK(url)
	}
	ds := make([]time.Duration, n)
	for i := range n {
		t := time.Now()
		callOK(url)
		ds[i] = time.Since(t)
	}
	slices.Sort(ds)
	return benchkit.Pct(ds, 50), benchkit.Pct(ds, 99)
}

// firstByte is the p50 time from sending a streamed request to its first
// body byte.
func firstByte(base string, n int) time.Duration {
	url := base + "/v1/messages?stream=1"
	ds := make([]time.Duration, n)
	one := make([]byte, 1)
	for i := range n {
		t := time.Now()
		resp, err := post(context.Background(), url)
		if err != nil {
			benchkit.Fail("stream: %v", err)
		}
		if _, err := io.ReadFull(resp.Body, one); err != nil {
			benchkit.Fail("stream: %v", err)
		}
		ds[i] = time.Since(t)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	slices.Sort(ds)
	return benchkit.Pct(ds, 50)
}

// throughput is the requests per second conc clients complete in dur.
func throughput(base string, conc int, dur time.Duration) float64 {
	url := base + "/v1/messages"
	var n atomic.Int64
	stop := time.Now().Add(dur)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for time.Now().Before(stop) {
				callOK(url)
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(n.Load()) / dur.Seconds()
}

// holdStreams opens n streams through the gateway, waits until each has
// read its first event, reads VmRSS of the process pid names ("self" for
// this one) and this process's heap, and lets them finish.
func holdStreams(base string, up *upstream, n int, pid string) (rssKB int64, heap uint64) {
	up.mu.Lock()
	up.release = make(chan struct{})
	rel := up.release
	up.mu.Unlock()
	url := base + "/v1/messages?stream=1&hold=1"
	var ready, done sync.WaitGroup
	ready.Add(n)
	done.Add(n)
	for range n {
		go func() {
			defer done.Done()
			resp, err := post(context.Background(), url)
			if err != nil {
				benchkit.Fail("held stream: %v", err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			if _, err := br.ReadString('\n'); err != nil {
				benchkit.Fail("held stream: %v", err)
			}
			ready.Done()
			_, _ = io.Copy(io.Discard, br)
		}()
	}
	ready.Wait()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rssKB = vmRSS(pid)
	close(rel)
	done.Wait()
	return rssKB, ms.HeapInuse
}

// exhaustedKey runs the exhausted-key measurement on a gateway of its own.
func exhaustedKey() (before, firstSecond, total int, statuses map[int]int) {
	statuses = map[int]int{}
	reset := time.Now().Add(2 * time.Second).Truncate(time.Second).Add(time.Second)
	var mu sync.Mutex
	var calls []time.Time
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		calls = append(calls, time.Now())
		first := len(calls) == 1
		mu.Unlock()
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("anthropic-organization-id", "org-exhausted")
		h.Set("anthropic-ratelimit-requests-limit", "50")
		h.Set("anthropic-ratelimit-requests-reset", reset.UTC().Format(time.RFC3339))
		if first {
			h.Set("anthropic-ratelimit-requests-remaining", "0")
			h.Set("retry-after", fmt.Sprint(int(time.Until(reset).Seconds()+0.999)))
			w.WriteHeader(429)
			_, _ = io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization (org-exhausted) of 50 requests per minute."}}`)
			return
		}
		h.Set("anthropic-ratelimit-requests-remaining", "49")
		_, _ = io.WriteString(w, okBody)
	})
	// Without the policy's reset margin and jitter (a minute each by
	// default), so the hold ends at the reset the upstream stated.
	pol := quota.DefaultPolicy()
	pol.ResetMargin, pol.Jitter = 0, 0
	g, err := gateway.New(gateway.Options{Upstreams: map[string]string{gateway.Anthropic: serve(up)}, Policy: &pol})
	if err != nil {
		benchkit.Fail("gateway: %v", err)
	}
	defer g.Close()
	url := serve(g) + "/anthropic/v1/messages"
	if status := call(url, "first call"); status != 429 {
		benchkit.Fail("first call: status %d, want the upstream's 429", status)
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			status := call(url, "held call")
			mu.Lock()
			statuses[status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	after := calls[1:]
	var firstAfter time.Time
	for _, t := range after {
		if t.Before(reset) {
			before++
		} else if firstAfter.IsZero() || t.Before(firstAfter) {
			firstAfter = t
		}
	}
	for _, t := range after {
		if !t.Before(firstAfter) && t.Before(firstAfter.Add(time.Second)) {
			firstSecond++
		}
	}
	return before, firstSecond, len(after), statuses
}

// vmRSS is the VmRSS line of /proc/PID/status, in kB; -1 when unread.
func vmRSS(pid string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// startBinary starts `layover gateway` (bin) on a free loopback port with
// a SQLite store at db and the Anthropic route to upstream, and returns
// its address and pid once it accepts connections, and its stop.
func startBinary(bin, db, upstream string) (string, int, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		benchkit.Fail("listen: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "gateway", "--listen", addr, "--store", db, "--upstream", "anthropic="+upstream)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		benchkit.Fail("layover gateway: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			benchkit.Fail("layover gateway did not listen on %s in 30 s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return addr, cmd.Process.Pid, func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianF(fs []float64) float64 {
	s := slices.Clone(fs)
	slices.Sort(s)
	return s[len(s)/2]
}

func us(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d.Nanoseconds())/1e6) }
