package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/platform"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/server"
	"github.com/layoverhq/layover/store"
)

// consoleOptions are serve's flags for the console (docs/console.md).
type consoleOptions struct {
	Listen    string // "": no console
	TokenFile string
	token     string // read from TokenFile by check
	// loopbackOnly, set by check, says Listen is a loopback address: the
	// console then answers only requests that name this machine.
	loopbackOnly bool
}

func consoleFlags(fs *flagSet, o *consoleOptions) {
	fs.StringVar(&o.Listen, "listen", "", "serve the web console, the JSON API, /metrics and /healthz on `ADDR`, e.g. 127.0.0.1:9464 (default: off)")
	fs.StringVar(&o.TokenFile, "token-file", "", "`FILE` holding the console token that cancel, approve and unblock need; required for a bind other than loopback")
}

// maxTokenFile bounds the token file, in bytes.
const maxTokenFile = 4096

// check reads the token file and refuses a bind other than loopback
// without one: usage errors, exit 2.
func (o *consoleOptions) check() error {
	if o.Listen == "" {
		if o.TokenFile != "" {
			return usageErr("serve: --token-file needs --listen")
		}
		return nil
	}
	hostPart, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return usageErr("serve: --listen %q: want HOST:PORT, e.g. 127.0.0.1:9464", shown(o.Listen))
	}
	o.loopbackOnly = loopback(hostPart)
	if o.TokenFile == "" {
		if !o.loopbackOnly {
			return usageErr("serve: --listen %s is not a loopback address: give --token-file, or listen on 127.0.0.1", shown(o.Listen))
		}
		return nil
	}
	info, err := os.Stat(o.TokenFile)
	if err != nil {
		return usageErr("serve: --token-file: %v", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return usageErr("serve: --token-file %s is readable by others (mode %04o): chmod 600 it", shown(o.TokenFile), info.Mode().Perm())
	}
	if info.Size() > maxTokenFile {
		return usageErr("serve: --token-file %s is larger than %d bytes", shown(o.TokenFile), maxTokenFile)
	}
	b, err := os.ReadFile(o.TokenFile)
	if err != nil {
		return usageErr("serve: --token-file: %v", err)
	}
	o.token = strings.TrimSpace(string(b))
	if o.token == "" {
		return usageErr("serve: --token-file %s is empty", shown(o.TokenFile))
	}
	return nil
}

// loopback reports whether host names only this machine: localhost or a
// loopback IP. An empty host (every interface) is not.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// listen binds o.Listen, before serve claims any job, so that an address
// in use ends serve (exit 1, one line) with no job touched. With no
// --listen it returns nil.
func (o *consoleOptions) listen() (net.Listener, error) {
	if o.Listen == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, failErr("serve: --listen %s: %v", shown(o.Listen), err)
	}
	return ln, nil
}

// startConsole serves package server's handler on ln (from listen) until
// the returned stop, which shuts the server down gracefully (up to 5 s)
// and closes ln. With a nil ln (no --listen) it does nothing.
func (o *consoleOptions) startConsole(ctx context.Context, env *Env, ln net.Listener, st store.Store, h *host.Host,
	policy quota.Policy, metrics http.Handler, logger *slog.Logger) (stop func(), err error) {
	if ln == nil {
		return func() {}, nil
	}
	srv, err := server.New(server.Config{Store: st, Jobs: h.Jobs, Clock: env.Clock, Token: o.token, Policy: policy, Metrics: metrics, LoopbackOnly: o.loopbackOnly,
		Alive: func() bool { return hostLive(ctx, env, st, h.ID()) }, Logger: logger,
		WaiterAlive: func(w store.Waiter) bool { return w.Hostname != env.Hostname || platform.Alive(w.PID) }})
	if err != nil {
		return nil, internalErr("serve: console: %v", err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("console stopped", "err", err)
		}
	}()
	logger.Info("console listening", "url", fmt.Sprintf("http://%s/", ln.Addr()), "actions", o.token != "")
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			_ = hs.Close()
		}
		<-done
	}, nil
}

// hostLive reports whether host id's heartbeat in the store is recent
// enough that it is live: serve's loop runs.
func hostLive(ctx context.Context, env *Env, st store.Store, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	hosts, err := st.Hosts(ctx)
	if err != nil {
		return false
	}
	for _, h := range hosts {
		if h.ID == id {
			return h.Live(env.Clock.Now())
		}
	}
	return false
}
