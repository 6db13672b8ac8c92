// Package fake holds stand-ins for the providers and command-line tools that
// layover talks to, for its end-to-end tests and for `layover demo`.
//
// Every fake speaks the real thing's wire format (status codes, headers, JSON
// bodies, the exact texts a CLI prints) so that layover's classifiers are
// exercised against what they meet in production. Where a fake departs from
// the real service, its doc comment says so.
//
// The fakes are production code: they import neither testing nor
// net/http/httptest, take their clock from their configuration, and are safe
// for concurrent use.
//
// The layover binary links this package for `layover demo` (the demo's fake
// GitHub and the fake gh it runs as), and for nothing else: no other
// product package imports it, and it does no work at initialisation (no
// regular expression compiled, no map built, no init function), so no
// other command's start-up runs any of its code. cmd/layover's
// TestFakeOnlyForDemo checks both.
package fake
