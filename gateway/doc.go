// Package gateway is layover's local quota-aware proxy for LLM APIs
// (docs/gateway.md): every agent and SDK on a host points its base URL at
// one gateway, which forwards /anthropic/…, /openai/… and /gemini/… to the
// provider's API and keeps the shared ledger of what the responses say.
//
//	g, err := gateway.New(gateway.Options{Store: st})
//	defer g.Close()
//	http.ListenAndServe("127.0.0.1:8089", g)
//
// # Routes and base URLs
//
// A request's path names its route in its first segment; the rest of the
// path, and the query, are appended to that route's upstream URL, which is
// the API's origin (DefaultUpstreams), optionally with a path prefix of
// its own (a corporate proxy). So the SDKs' base URLs are:
//
//	ANTHROPIC_BASE_URL=http://127.0.0.1:8089/anthropic
//	OPENAI_BASE_URL=http://127.0.0.1:8089/openai/v1
//	GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8089/gemini
//
// (OPENAI_BASE_URL includes /v1, as the OpenAI SDKs expect of it; the
// others do not.) Requests and responses pass through unchanged but for
// the hop-by-hop headers, the inbound Forwarded and X-Forwarded-* headers
// and the gateway's own x-layover-priority; a streamed response is flushed
// as each write arrives; a client that goes away cancels the upstream call.
//
// # Quotas
//
// Each route sends through a transport.Transport of that provider (package
// transport keeps the in-memory view, classifies every response and
// records it in the store, under the same keys a program using the
// transport directly and `layover status` use: the upstream's host, the
// principal — the organisation id a response names, else the key's
// fingerprint — and the resource). The key itself passes through and is
// never kept. Nothing is retried that the client sent: a rejection, an
// overload, a short throttle goes back to the client as the provider sent
// it, and the client's own retry decides.
//
// While a key is held back (exhausted with its reset, or under a throttle's
// stated wait), a new request is held until the transport's resume time,
// when that is within Options.MaxHold, and then sent; after a hold,
// requests of one key go out at most Options.ResumeRate per second.
// Otherwise, and at once for a request marked `x-layover-priority: low`
// (which also stops at the reserve), the gateway answers itself, without
// calling upstream: 429, retry-after, x-layover-deferred: 1, and an error
// body in the provider's own format, so the SDKs' retry waits the right
// time.
package gateway
