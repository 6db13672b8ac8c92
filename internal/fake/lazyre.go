package fake

import (
	"regexp"
	"sync"
)

// lazyRegexp is a regular expression compiled on first use. A package-level
// lazyRegexp is static data: unlike a *regexp.Regexp compiled at
// initialisation, or a sync.OnceValue (two allocations each), it costs a
// program that links this package, as every layover command does for
// `layover demo`, nothing at start-up.
type lazyRegexp struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
}

// get returns the compiled expression. Safe for concurrent use.
func (l *lazyRegexp) get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.expr) })
	return l.re
}
