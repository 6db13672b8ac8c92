package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/layoverhq/layover/gateway"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/redact"
)

// Gateway defaults of the command (docs/gateway.md).
const (
	defaultGatewayListen = "127.0.0.1:8089"
	// defaultGatewayDrain is how long SIGTERM or SIGINT lets in-flight
	// requests (streams) finish before the gateway closes them.
	defaultGatewayDrain = 10 * time.Second
	minGatewayBody      = 1 << 10
	maxGatewayBody      = 4 << 30
)

// GatewayOptions are the flags of layover gateway.
type GatewayOptions struct {
	Listen       string
	AllowRemote  bool
	Store        string
	Policy       quota.Policy
	MaxHold      time.Duration
	MaxBody      byteSize
	MaxHeld      byteSize
	ResumeRate   float64
	Pace         bool
	Upstreams    stringList // NAME=URL
	LogFormat    string
	DrainTimeout time.Duration
}

func runGateway(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 && args[0] == "env" {
		return gatewayEnv(ctx, env, args[1:])
	}
	opts := GatewayOptions{Policy: quota.DefaultPolicy(), MaxBody: gateway.DefaultMaxBody, MaxHeld: gateway.DefaultMaxHeldBytes}
	fs := newFlagSet("gateway", "gateway [--listen ADDR] [--allow-remote] [--store URL] [--max-hold D] [--max-body SIZE] [--max-held SIZE] [--upstream NAME=URL]... [policy flags] [--resume-rate N] [--log-format text|json] [--drain-timeout D]")
	fs.StringVar(&opts.Listen, "listen", defaultGatewayListen, "serve the gateway, /metrics and /healthz on `ADDR`")
	fs.BoolVar(&opts.AllowRemote, "allow-remote", false, "allow a --listen address other than loopback (the gateway has no authentication of its own)")
	storeLoc := storeFlag(fs)
	fs.Var(&opts.Policy.Reserve, "reserve", "units kept for normal-priority requests: `N` or RESOURCE=N, repeatable (default min(500, 10% of the limit)); a low-priority request stops at it")
	fs.durationVar(&opts.Policy.ResetMargin, "reset-margin", opts.Policy.ResetMargin, 0, quota.MaxPolicyWait, "resume this long past a known reset")
	fs.durationVar(&opts.Policy.Jitter, "jitter", opts.Policy.Jitter, 0, quota.MaxPolicyWait, "add a uniform random 0..jitter to every resume time")
	fs.durationVar(&opts.Policy.SecondaryWait, "secondary-wait", opts.Policy.SecondaryWait, 0, quota.MaxPolicyWait, "hold a key this long after a throttle that states no retry-after")
	fs.durationVar(&opts.Policy.UnknownReset, "unknown-reset", opts.Policy.UnknownReset, time.Second, quota.MaxPolicyWait, "assume an unknown reset is this far ahead")
	fs.durationVar(&opts.MaxHold, "max-hold", gateway.DefaultMaxHold, 0, gateway.MaxMaxHold, "hold a request on an exhausted key at most this long, else answer 429 at once (0: never hold)")
	fs.Var(&opts.MaxBody, "max-body", "largest request body, e.g. 32MiB, 500KB or bytes (default 32MiB); a larger one is answered 413")
	fs.Var(&opts.MaxHeld, "max-held", "most request-body bytes held in memory at once, across every held request (default 256MiB); a request that would pass it is answered 429 at once instead of held")
	fs.Float64Var(&opts.ResumeRate, "resume-rate", gateway.DefaultResumeRate, "held requests sent per second per quota key once their hold ends")
	fs.BoolVar(&opts.Pace, "pace", false, "pace low-priority requests (docs/pacing.md)")
	fs.Var(&opts.Upstreams, "upstream", "send route `NAME=URL` (anthropic, openai, gemini) to URL instead of the provider's API, repeatable")
	fs.StringVar(&opts.LogFormat, "log-format", logFormatText, "log lines as text or json")
	fs.durationVar(&opts.DrainTimeout, "drain-timeout", defaultGatewayDrain, 0, time.Hour, "on SIGTERM or SIGINT, let in-flight requests and streams finish this long")
	if err := fs.parseNoArgs(env, args); err != nil {
		return err
	}
	opts.Store = *storeLoc
	if err := opts.Policy.Validate(); err != nil {
		return usageErr("gateway: %v", err)
	}
	host, _, err := net.SplitHostPort(opts.Listen)
	if err != nil {
		return usageErr("gateway: --listen %q: want HOST:PORT, e.g. %s", shown(opts.Listen), defaultGatewayListen)
	}
	if !loopback(host) && !opts.AllowRemote {
		return usageErr("gateway: --listen %s is not a loopback address: give --allow-remote, or listen on 127.0.0.1", shown(opts.Listen))
	}
	if !(opts.ResumeRate >= 1.0/3600 && opts.ResumeRate <= 1e6) { // NaN fails both
		return usageErr("gateway: --resume-rate %v: want %g to %g requests per second", opts.ResumeRate, 1.0/3600, 1e6)
	}
	if opts.LogFormat != logFormatText && opts.LogFormat != logFormatJSON {
		return usageErr("gateway: --log-format %q: want text or json", shown(opts.LogFormat))
	}
	ups, err := parseUpstreams(opts.Upstreams)
	if err != nil {
		return err
	}
	return opts.run(ctx, env, ups)
}

// parseUpstreams reads the --upstream values. Errors never quote a URL.
func parseUpstreams(vals []string) (map[string]string, error) {
	ups := map[string]string{}
	for _, v := range vals {
		name, raw, ok := strings.Cut(v, "=")
		name = strings.ToLower(strings.TrimSpace(name))
		if !ok || raw == "" {
			return nil, usageErr("gateway: --upstream: want NAME=URL, NAME one of %s", strings.Join(gateway.Routes(), ", "))
		}
		known := false
		for _, r := range gateway.Routes() {
			known = known || r == name
		}
		if !known {
			return nil, usageErr("gateway: --upstream %s: unknown route: want one of %s", shown(name), strings.Join(gateway.Routes(), ", "))
		}
		if _, dup := ups[name]; dup {
			return nil, usageErr("gateway: --upstream %s given twice", name)
		}
		if _, err := gateway.ParseUpstream(raw); err != nil {
			return nil, usageErr("gateway: --upstream %s: %v", name, err)
		}
		ups[name] = raw
	}
	return ups, nil
}

func (o *GatewayOptions) run(ctx context.Context, env *Env, ups map[string]string) error {
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return failErr("gateway: --listen %s: %v", shown(o.Listen), err)
	}
	defer ln.Close()
	st, err := openStore(ctx, env, o.Store)
	if err != nil {
		return err
	}
	defer st.Close()
	known := knownSecrets(env, o.Store)
	logger := slog.New(logHandler(o.LogFormat, &redact.Writer{W: env.Stderr, Known: known}))
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	g, err := gateway.New(gateway.Options{
		Upstreams: ups, Store: st, Policy: &o.Policy, MaxHold: o.MaxHold, NoHold: o.MaxHold == 0, MaxBody: int64(o.MaxBody), MaxHeldBytes: int64(o.MaxHeld),
		ResumeRate: o.ResumeRate, Pace: o.Pace, Clock: env.Clock, Rand: env.Rand, Logger: logger, Hostname: env.Hostname,
		Registerer: reg,
	})
	if err != nil {
		return usageErr("%v", err)
	}
	defer func() {
		if err := g.Close(); err != nil {
			logger.Warn("layover gateway: write the last observations", "err", err)
		}
	}()
	mux := gatewayHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), g)
	// No read or write timeout: a request body may be large, and a
	// stream lasts as long as the model writes; the headers are bounded.
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	logger.Info("layover gateway listening", "url", fmt.Sprintf("http://%s", ln.Addr()))
	for {
		select {
		case sig := <-env.Signals:
			if sig != syscall.SIGINT && sig != syscall.SIGTERM {
				continue
			}
			logger.Info("layover gateway stopping", "signal", fmt.Sprint(sig), "drain", o.DrainTimeout.String())
			sctx, cancel := context.WithTimeout(context.Background(), o.DrainTimeout)
			err := hs.Shutdown(sctx)
			cancel()
			if err != nil {
				_ = hs.Close()
			}
			return served2err(<-served)
		case <-ctx.Done():
			_ = hs.Close()
			return served2err(<-served)
		case err := <-served:
			return served2err(err)
		}
	}
}

// gatewayHandler serves GET /metrics and GET /healthz by their exact
// paths and gives every other request to gw as it came. Not a ServeMux:
// that would redirect an unclean path (/anthropic//v1/messages) instead
// of forwarding it.
func gatewayHandler(metrics, gw http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			switch r.URL.Path {
			case "/metrics":
				metrics.ServeHTTP(w, r)
				return
			case "/healthz":
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				_, _ = w.Write([]byte("ok\n"))
				return
			}
		}
		gw.ServeHTTP(w, r)
	})
}

// served2err is the command's error for what http.Server.Serve returned:
// none once the server was closed.
func served2err(err error) error {
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return internalErr("gateway: %v", err)
}

// byteSize is a size flag: bytes, or a number with a unit (B, KB, MB, GB
// in powers of 1000; KiB, MiB, GiB in powers of 1024), from 1 KiB to 4 GiB.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(v string) error {
	n, err := parseByteSize(v)
	if err != nil {
		return err
	}
	if n < minGatewayBody || n > maxGatewayBody {
		return fmt.Errorf("want a size from 1KiB to 4GiB")
	}
	*b = byteSize(n)
	return nil
}

// parseByteSize reads "32MiB", "500KB", "1048576": a whole number and an
// optional unit, case-insensitive. It refuses negative, fractional and
// overflowing sizes.
func parseByteSize(v string) (int64, error) {
	s := strings.TrimSpace(v)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i > 18 {
		return 0, fmt.Errorf("want a size such as 32MiB, 500KB or a number of bytes")
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want a size such as 32MiB, 500KB or a number of bytes")
	}
	units := map[string]int64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
	mul, ok := units[strings.ToLower(strings.TrimSpace(s[i:]))]
	if !ok {
		return 0, fmt.Errorf("want a size such as 32MiB, 500KB or a number of bytes")
	}
	if n > (1<<62)/mul {
		return 0, fmt.Errorf("size too large")
	}
	return n * mul, nil
}
