package view

import (
	"math"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// Status is the status contract of docs/design.md: every observed quota,
// the waiting commands, the jobs counted by state and the durable hosts.
type Status struct {
	Quota   []Quota        `json:"quota"`
	Waiting []Waiter       `json:"waiting"`
	Jobs    map[string]int `json:"jobs"`
	Hosts   []Host         `json:"hosts"`
}

// Quota is one quota key's latest observation. Limit and Remaining are
// counts of the resource's units, nil when unknown; Cause is what blocks
// the key under the policy (nil: nothing); WaitUntil is when the key's
// scheduled work may go on, nil when it is not held. BurnPerMin is the
// key's burn rate in units (calls) a minute, to two decimals, nil when
// the history is too short for one (quota.BurnRate); ExhaustsAt is when
// the remaining count would reach 0 at that rate, nil when not before the
// reset (quota.ProjectExhaustion).
type Quota struct {
	Host       string `json:"host"`
	Principal  string `json:"principal"`
	Resource   string `json:"resource"`
	Limit      any    `json:"limit"`
	Remaining  any    `json:"remaining"`
	ResetAt    any    `json:"reset_at"`
	ObservedAt any    `json:"observed_at"`
	ObservedBy string `json:"observed_by"`
	Cause      any    `json:"cause"`
	InWait     bool   `json:"in_wait"`
	WaitUntil  any    `json:"wait_until"`
	BurnPerMin any    `json:"burn_per_min"`
	ExhaustsAt any    `json:"exhausts_at"`
}

// SetBurn sets q's BurnPerMin and ExhaustsAt at now from samples, the
// history of s's key (every host's observations).
func (q *Quota) SetBurn(s quota.State, samples []quota.Sample, now time.Time) {
	b := quota.BurnRate(samples, now)
	q.BurnPerMin, q.ExhaustsAt = nil, nil
	if !b.Known {
		return
	}
	q.BurnPerMin = math.Round(b.PerMinute*100) / 100
	if at, ok := quota.ProjectExhaustion(s, b, now); ok {
		q.ExhaustsAt = Time(at)
	}
}

// Waiter is a command waiting out a quota (layover run or pass), as it
// registered in the store.
type Waiter struct {
	PID       int    `json:"pid"`
	Command   string `json:"command"`
	Key       string `json:"key"`
	Stage     string `json:"stage"`
	WaitUntil any    `json:"wait_until"`
}

// Host is a durable host (layover serve) and whether its heartbeat is
// recent enough at now that it is live.
type Host struct {
	ID       string `json:"id"`
	Hostname string `json:"hostname"`
	LastSeen any    `json:"last_seen"`
	Live     bool   `json:"live"`
}

// NewStatus builds the status object at now: states and waiters in the
// order given, below-reserve judged by policy, each key's burn from its
// history (history[key]; none for a key without one).
func NewStatus(states []quota.State, history map[quota.Key][]quota.Sample, waiters []store.Waiter, counts map[job.State]int,
	hosts []job.Host, policy quota.Policy, now time.Time) Status {
	out := Status{Quota: Quotas(states, policy, now), Waiting: Waiters(waiters), Jobs: map[string]int{}, Hosts: Hosts(hosts, now)}
	for i, s := range states {
		out.Quota[i].SetBurn(s, history[s.Key], now)
	}
	for state, n := range counts {
		out.Jobs[string(state)] = n
	}
	return out
}

// Quotas builds the quota objects of states at now, in order.
func Quotas(states []quota.State, policy quota.Policy, now time.Time) []Quota {
	out := []Quota{}
	for _, s := range states {
		q := Quota{Host: s.Host, Principal: s.Principal, Resource: s.Resource,
			Limit: Known(s.Limit), Remaining: Known(s.Remaining), ResetAt: Time(s.ResetAt),
			ObservedAt: Time(s.ObservedAt), ObservedBy: s.ObservedBy, InWait: s.Exhausted(now)}
		if !s.ResetKnown {
			q.ResetAt = nil
		}
		if b, ok := policy.Blocks(s, now); ok {
			q.Cause = string(b.Cause)
		}
		if q.InWait || (q.Cause == string(quota.CauseBelowReserve) && s.ResetKnown) {
			// Held below its reserve, the key's scheduled work waits for
			// the reset too (its running commands go on).
			q.WaitUntil = Time(s.ResetAt)
		}
		out = append(out, q)
	}
	return out
}

// Waiters builds the waiter objects of ws, in order.
func Waiters(ws []store.Waiter) []Waiter {
	out := []Waiter{}
	for _, w := range ws {
		out = append(out, Waiter{PID: w.PID, Command: w.Command, Key: w.Key.String(), Stage: w.Stage, WaitUntil: Time(w.WaitUntil)})
	}
	return out
}

// Hosts builds the host objects of hs at now, in order.
func Hosts(hs []job.Host, now time.Time) []Host {
	out := []Host{}
	for _, h := range hs {
		out = append(out, Host{ID: h.ID, Hostname: h.Hostname, LastSeen: Time(h.LastSeen), Live: h.Live(now)})
	}
	return out
}
