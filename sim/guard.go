package sim

import (
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
)

// networkGuard replaces http.DefaultTransport while a simulation runs: a
// request sent through it (by any code using net/http's default client or
// transport) is counted and refused, so a simulation that reports no
// provider calls has sent none that way.
type networkGuard struct {
	calls atomic.Int64
	prev  http.RoundTripper
}

// guardMu serialises the simulations that swap http.DefaultTransport.
var guardMu sync.Mutex

func guardNetwork() *networkGuard {
	guardMu.Lock()
	g := &networkGuard{prev: http.DefaultTransport}
	http.DefaultTransport = g
	return g
}

// errNoNetwork is what a request sent during a simulation gets.
var errNoNetwork = errors.New("sim: no request leaves a simulation")

// RoundTrip implements http.RoundTripper.
func (g *networkGuard) RoundTrip(*http.Request) (*http.Response, error) {
	g.calls.Add(1)
	return nil, errNoNetwork
}

func (g *networkGuard) restore() {
	http.DefaultTransport = g.prev
	guardMu.Unlock()
}
