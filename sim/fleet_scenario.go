package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/layoverhq/layover/schedule"
	"github.com/layoverhq/layover/yamlerr"
	"go.yaml.in/yaml/v3"
)

// The strategies a fleet scenario compares (docs/simulator.md).
const (
	StrategyNone     = "none"     // no layover: every pass runs, calls fail when the quota is out
	StrategyDefaults = "defaults" // layover's admission, ledger and waits, as configured by default
	StrategyPacing   = "pacing"   // the same with pacing on (pass --pace)
)

// Strategies are the strategies in the order a report lists them.
var Strategies = []string{StrategyNone, StrategyDefaults, StrategyPacing}

// The kinds of quota a scenario can simulate.
const (
	QuotaGitHub = "github" // an hourly window (5,000 calls by default)
	QuotaAgent  = "agent"  // a 5-hour window
)

// Bounds of a fleet scenario: every number a file gives lies within them,
// so that no run overflows or takes more than minutes.
const (
	MaxScenarioSize   = 1 << 20 // bytes of one scenario file
	MaxFleetHosts     = 1000
	MaxFleetLimit     = 10_000_000
	MaxFleetWindow    = 24 * time.Hour
	MinFleetWindow    = time.Minute
	MaxFleetDuration  = 7 * 24 * time.Hour
	MaxPassesPerHour  = 100_000
	MaxCallsPerPass   = 10_000
	MaxPassesPerSlot  = 1000
	MaxFleetCommands  = 10_000
	MaxCallsPerMinute = 600
	MaxCommandLength  = 7 * 24 * time.Hour
	MaxFleetAgents    = 10_000
	MaxUnitsPerMinute = 600
	// MaxFleetCalls bounds the demand of a whole run (the calls the
	// scenario's work would make if nothing held it back), so that a
	// simulated week of a large fleet is refused rather than run for hours.
	MaxFleetCalls = 20_000_000
)

// Scenario is one fleet scenario (docs/simulator.md, `layover sim fleet`).
type Scenario struct {
	Quota      QuotaSpec      `yaml:"quota"`
	Hosts      int            `yaml:"hosts"`
	Duration   Duration       `yaml:"duration"`
	Passes     PassSpec       `yaml:"passes"`
	Commands   CommandSpec    `yaml:"commands"`
	Agents     AgentSpec      `yaml:"agents"`
	Strategies []string       `yaml:"strategies"`
	line       map[string]int // the line of each field, by its dotted path
}

// QuotaSpec is the provider quota the fleet shares.
type QuotaSpec struct {
	Kind   string   `yaml:"kind"`
	Limit  int64    `yaml:"limit"`
	Window Duration `yaml:"window"`
}

// PassSpec says when passes start and what each costs. At most one of
// PerHour (across the fleet, evenly spaced, the hosts in turn), Every
// (per host, aligned to multiples of Every) and Cron (per host, a cron
// expression in UTC as `layover schedule add --cron` reads it) is set;
// with Every or Cron, each host starts PerSlot passes at every slot.
type PassSpec struct {
	PerHour int      `yaml:"per_hour"`
	Every   Duration `yaml:"every"`
	Cron    string   `yaml:"cron"`
	PerSlot int      `yaml:"per_slot"`
	Calls   int      `yaml:"calls"`
	// Spread is the time over which one pass makes its calls; Jitter the
	// widest random delay of a pass's start.
	Spread Duration `yaml:"spread"`
	Jitter Duration `yaml:"jitter"`
	cron   schedule.Expr
}

// CommandSpec is the long commands: Count of them run at every moment
// across the fleet (the hosts in turn), each for Length of work at
// CallsPerMinute; one that ends (done or lost) is followed by the next.
type CommandSpec struct {
	Count          int      `yaml:"count"`
	CallsPerMinute int      `yaml:"calls_per_minute"`
	Length         Duration `yaml:"duration"`
}

// AgentSpec is the agent jobs: Count of them start over the run, evenly
// spread across the hosts and the time (each start delayed by a random
// part of the spacing, drawn from the seed), each needing Length of work
// at UnitsPerMinute units (turns, messages) of the scenario's agent quota.
type AgentSpec struct {
	Count          int      `yaml:"count"`
	UnitsPerMinute int      `yaml:"units_per_minute"`
	Length         Duration `yaml:"duration"`
	// span is the time the starts spread over: the file's duration, kept
	// when --duration cuts or extends the run (WithDuration), so that a
	// shorter run simulates the first part of the same day.
	span time.Duration
}

// Duration is a YAML duration ("90s", "1h30m"): Go's syntax, never
// negative.
type Duration struct{ time.Duration }

// UnmarshalYAML reads a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &ScenarioError{Line: n.Line, Msg: "want a duration like 90s or 1h"}
	}
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil || v < 0 {
		return &ScenarioError{Line: n.Line, Msg: fmt.Sprintf("%q: want a duration like 90s or 1h", n.Value)}
	}
	d.Duration = v
	return nil
}

// ScenarioError is a fault of a scenario file: "file:line: field: problem".
type ScenarioError struct {
	Path  string
	Line  int
	Field string
	Msg   string
}

func (e *ScenarioError) Error() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString(e.Path + ":")
	}
	fmt.Fprintf(&b, "%d: ", max(e.Line, 1))
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ParseScenarioFile reads a scenario file (ParseScenario); a fault of the
// file is a *ScenarioError with its path.
func ParseScenarioFile(path string) (Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return Scenario{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxScenarioSize+1))
	if err != nil {
		return Scenario{}, err
	}
	s, err := ParseScenario(data)
	if se, ok := errors.AsType[*ScenarioError](err); ok {
		se.Path = path
	}
	return s, err
}

// ParseScenario reads a scenario: YAML, every key as documented
// (docs/simulator.md) and each once, every number within its bounds. It
// returns the scenario with its defaults set; every fault is a
// *ScenarioError naming its line and field.
func ParseScenario(data []byte) (s Scenario, err error) {
	if len(data) > MaxScenarioSize {
		return Scenario{}, &ScenarioError{Line: 1, Msg: fmt.Sprintf("larger than %d bytes", MaxScenarioSize)}
	}
	defer func() {
		if r := recover(); r != nil { // the YAML library's own fault: still a bad file
			s, err = Scenario{}, &ScenarioError{Line: 1, Msg: "the YAML parser failed on this file"}
		}
	}()
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return Scenario{}, yamlFault(err)
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return Scenario{}, &ScenarioError{Line: 1, Msg: "want a mapping of the scenario's fields (docs/simulator.md)"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return Scenario{}, yamlFault(err)
	}
	s.line = map[string]int{}
	lines(root.Content[0], "", s.line)
	s.setDefaults()
	if err := s.validate(); err != nil {
		return Scenario{}, err
	}
	return s, nil
}

// yamlFault places the YAML library's error at its line.
// A decoding fault (an unknown field, a string for a number) is the
// first of the library's *yaml.TypeError, "line N: ...", with Go's type
// names left out.
func yamlFault(err error) error {
	if se, ok := errors.AsType[*ScenarioError](err); ok {
		return se
	}
	if te, ok := errors.AsType[*yaml.TypeError](err); ok && len(te.Errors) > 0 {
		if m := typeErrLine().FindStringSubmatch(te.Errors[0]); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil {
				msg := typeName().ReplaceAllString(m[2], "")
				return &ScenarioError{Line: n, Msg: strings.TrimSpace(msg)}
			}
		}
	}
	line, msg := yamlerr.Place(err)
	return &ScenarioError{Line: line, Msg: msg}
}

// The type-error patterns are compiled on first use, not at the binary's
// start (cmd/layover's startup test).
var (
	typeErrLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^line (\d+): (.*)$`) })
	typeName    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(` (in type|into) sim\.[A-Za-z0-9_]+$`) })
)

// lines records the line of every key under n, by dotted path.
func lines(n *yaml.Node, prefix string, out map[string]int) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := prefix + n.Content[i].Value
		out[k] = n.Content[i].Line
		lines(n.Content[i+1], k+".", out)
	}
}

func (s *Scenario) setDefaults() {
	if s.Quota.Kind == "" {
		s.Quota.Kind = QuotaGitHub
	}
	if s.Quota.Window.Duration == 0 {
		s.Quota.Window.Duration = time.Hour
		if s.Quota.Kind == QuotaAgent {
			s.Quota.Window.Duration = 5 * time.Hour
		}
	}
	if s.Quota.Limit == 0 && s.Quota.Kind == QuotaGitHub {
		s.Quota.Limit = 5000
	}
	if s.Hosts == 0 {
		s.Hosts = 1
	}
	if s.Duration.Duration == 0 {
		s.Duration.Duration = 24 * time.Hour
	}
	if (s.Passes.Every.Duration > 0 || s.Passes.Cron != "") && s.Passes.PerSlot == 0 {
		s.Passes.PerSlot = 1
	}
	if len(s.Strategies) == 0 {
		s.Strategies = slices.Clone(Strategies)
	}
	s.Agents.span = s.Duration.Duration
}

// fault is a *ScenarioError at field's line.
func (s *Scenario) fault(field, format string, args ...any) error {
	line, ok := s.line[field]
	for !ok && strings.Contains(field, ".") { // a default: the parent's line
		field2 := field[:strings.LastIndex(field, ".")]
		line, ok = s.line[field2]
		if ok {
			break
		}
		field = field2
	}
	return &ScenarioError{Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// given reports whether a section's field is to be checked: the file
// gives it, or the section's count needs it.
func (s *Scenario) given(count int, field string) bool {
	_, ok := s.line[field]
	return count > 0 || ok
}

// countGiven is the fault of a section (commands, agents) whose other
// fields are given without its count, at the first of them.
func (s *Scenario) countGiven(section string, fields ...string) error {
	if _, ok := s.line[section+".count"]; ok {
		return nil
	}
	line := 0
	for _, f := range fields {
		if l, ok := s.line[section+"."+f]; ok && (line == 0 || l < line) {
			line = l
		}
	}
	if line == 0 {
		return nil
	}
	return &ScenarioError{Line: line, Field: section + ".count", Msg: "required with " + strings.Join(fields, "/")}
}

func (s *Scenario) validate() error {
	q := s.Quota
	switch {
	case q.Kind != QuotaGitHub && q.Kind != QuotaAgent:
		return s.fault("quota.kind", "%q: want github or agent", q.Kind)
	case q.Limit < 1 || q.Limit > MaxFleetLimit:
		return s.fault("quota.limit", "want a number from 1 to %d", MaxFleetLimit)
	case q.Window.Duration < MinFleetWindow || q.Window.Duration > MaxFleetWindow:
		return s.fault("quota.window", "want a duration from %s to %s", MinFleetWindow, MaxFleetWindow)
	case q.Window.Duration%time.Second != 0:
		return s.fault("quota.window", "want whole seconds")
	case s.Hosts < 1 || s.Hosts > MaxFleetHosts:
		return s.fault("hosts", "want a number from 1 to %d", MaxFleetHosts)
	case s.Duration.Duration < time.Minute || s.Duration.Duration > MaxFleetDuration:
		return s.fault("duration", "want a duration from 1m to %s", MaxFleetDuration)
	}
	p := s.Passes
	switch {
	case p.PerHour < 0 || p.PerHour > MaxPassesPerHour:
		return s.fault("passes.per_hour", "want a number from 0 to %d", MaxPassesPerHour)
	case p.PerHour > 0 && p.Every.Duration > 0:
		return s.fault("passes.every", "give one of per_hour, every and cron")
	case p.Cron != "" && (p.PerHour > 0 || p.Every.Duration > 0):
		return s.fault("passes.cron", "give one of per_hour, every and cron")
	case p.Every.Duration > 0 && (p.Every.Duration < time.Second || p.Every.Duration > MaxFleetWindow):
		return s.fault("passes.every", "want a duration from 1s to %s", MaxFleetWindow)
	case p.PerSlot < 0 || p.PerSlot > MaxPassesPerSlot:
		return s.fault("passes.per_slot", "want a number from 1 to %d", MaxPassesPerSlot)
	case p.PerSlot > 0 && p.Every.Duration == 0 && p.Cron == "":
		return s.fault("passes.per_slot", "only with every or cron")
	case p.Calls < 0 || p.Calls > MaxCallsPerPass:
		return s.fault("passes.calls", "want a number from 0 to %d", MaxCallsPerPass)
	case (p.PerHour > 0 || p.Every.Duration > 0 || p.Cron != "") && p.Calls == 0:
		return s.fault("passes.calls", "want the calls each pass makes (1 or more)")
	case p.Spread.Duration > time.Hour:
		return s.fault("passes.spread", "want a duration up to 1h")
	case p.Jitter.Duration > time.Hour:
		return s.fault("passes.jitter", "want a duration up to 1h")
	}
	if p.Cron != "" {
		e, err := schedule.Parse(p.Cron, "UTC")
		if err != nil {
			return s.fault("passes.cron", "%v", err)
		}
		s.Passes.cron = e
	}
	// A rate or a duration is checked whenever it is given (or needed:
	// a count of jobs), and neither is taken without a count.
	c := s.Commands
	switch {
	case c.Count < 0 || c.Count > MaxFleetCommands:
		return s.fault("commands.count", "want a number from 0 to %d", MaxFleetCommands)
	case s.given(c.Count, "commands.calls_per_minute") && (c.CallsPerMinute < 1 || c.CallsPerMinute > MaxCallsPerMinute):
		return s.fault("commands.calls_per_minute", "want a number from 1 to %d", MaxCallsPerMinute)
	case s.given(c.Count, "commands.duration") && (c.Length.Duration < time.Minute || c.Length.Duration > MaxCommandLength):
		return s.fault("commands.duration", "want a duration from 1m to %s", MaxCommandLength)
	}
	if err := s.countGiven("commands", "calls_per_minute", "duration"); err != nil {
		return err
	}
	a := s.Agents
	switch {
	case a.Count < 0 || a.Count > MaxFleetAgents:
		return s.fault("agents.count", "want a number from 0 to %d", MaxFleetAgents)
	case a.Count > 0 && q.Kind != QuotaAgent:
		return s.fault("agents.count", "agent jobs spend an agent quota: want quota.kind agent")
	case s.given(a.Count, "agents.units_per_minute") && (a.UnitsPerMinute < 1 || a.UnitsPerMinute > MaxUnitsPerMinute):
		return s.fault("agents.units_per_minute", "want a number from 1 to %d", MaxUnitsPerMinute)
	case s.given(a.Count, "agents.duration") && (a.Length.Duration < time.Minute || a.Length.Duration > MaxCommandLength):
		return s.fault("agents.duration", "want a duration from 1m to %s", MaxCommandLength)
	}
	if err := s.countGiven("agents", "units_per_minute", "duration"); err != nil {
		return err
	}
	for i, name := range s.Strategies {
		if !slices.Contains(Strategies, name) {
			return s.fault("strategies", "%q: want none, defaults or pacing", name)
		}
		if slices.Contains(s.Strategies[:i], name) {
			return s.fault("strategies", "%q given twice", name)
		}
	}
	if d := s.demand(); d > MaxFleetCalls {
		return s.fault("duration", "the scenario's work would make %.0f calls, over the bound of %d: shorten it", d, MaxFleetCalls)
	}
	return nil
}

// passes is how many passes start over the run across the fleet, as a
// float (it cannot overflow one); a cron schedule's slots are counted,
// up to the first that would take the demand past MaxFleetCalls.
func (s *Scenario) passes() float64 {
	p := s.Passes
	switch {
	case p.Every.Duration > 0:
		slots := float64(s.Duration.Duration / p.Every.Duration)
		if s.Duration.Duration%p.Every.Duration != 0 {
			slots++
		}
		return slots * float64(s.Hosts*p.PerSlot)
	case p.Cron != "":
		perSlot := float64(s.Hosts * p.PerSlot)
		var n float64
		end := fleetStart.Add(s.Duration.Duration)
		for t := p.cron.Next(fleetStart.Add(-time.Nanosecond)); !t.IsZero() && t.Before(end); t = p.cron.Next(t) {
			if n += perSlot; n*float64(max(p.Calls, 1)) > MaxFleetCalls {
				break
			}
		}
		return n
	}
	return s.Duration.Hours() * float64(p.PerHour)
}

// demand is the calls the scenario's work would make if nothing held it
// back; within the bounds it cannot overflow a float.
func (s *Scenario) demand() float64 {
	return s.passes()*float64(s.Passes.Calls) +
		s.Duration.Hours()*60*float64(s.Commands.Count*s.Commands.CallsPerMinute) +
		s.agentsStarted()*float64(s.Agents.turns())
}

// turns is the turns one agent job needs: its work's minutes at the
// units a minute, to the nearest (at least one with any work).
func (a AgentSpec) turns() int {
	if a.UnitsPerMinute < 1 || a.Length.Duration <= 0 {
		return 0
	}
	return max(int(math.Round(a.Length.Minutes()*float64(a.UnitsPerMinute))), 1)
}

// agentSpan is the time the agent jobs' starts spread over.
func (s *Scenario) agentSpan() time.Duration {
	if s.Agents.span > 0 {
		return s.Agents.span
	}
	return s.Duration.Duration
}

// agentsStarted is about how many agent jobs start within the run: all
// of them, or the share of the span the run covers.
func (s *Scenario) agentsStarted() float64 {
	return float64(s.Agents.Count) * min(1, s.Duration.Seconds()/s.agentSpan().Seconds())
}

// WithDuration returns s simulated for d instead (a CLI override),
// checked as the file's duration is.
func (s Scenario) WithDuration(d time.Duration) (Scenario, error) {
	s.Duration.Duration = d
	s.line = map[string]int{}
	if err := s.validate(); err != nil {
		se, _ := errors.AsType[*ScenarioError](err)
		if se != nil && se.Field == "duration" {
			return Scenario{}, fmt.Errorf("--duration: %s", se.Msg)
		}
		return Scenario{}, err
	}
	return s, nil
}
