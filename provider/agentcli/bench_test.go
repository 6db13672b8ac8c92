package agentcli

import (
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
)

// claudeFailedStream is a typical failed `claude -p --output-format
// stream-json --verbose` run: a session that read files and ran tools for
// a few turns, then hit its 5-hour limit (about 12 KB).
func claudeFailedStream() []byte {
	reset := now.Add(2 * time.Hour).Unix()
	ls := []string{ccInit()}
	for i := 0; i < 8; i++ {
		ls = append(ls,
			ccAssistant("Let me look at the next file. "+strings.Repeat("Reading the handler and its tests. ", 12), ""),
			jsonLine(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{map[string]any{
				"type": "tool_result", "tool_use_id": "toolu_01", "content": strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) {}\n", 10)}}},
				"session_id": ccSession, "uuid": "c0ffee00-0000-4000-8000-000000000010"}),
		)
	}
	ls = append(ls,
		ccRate("allowed_warning", reset, "seven_day", map[string]any{"utilization": 0.81}),
		ccRetry(1, 429, "rate_limit"),
		ccRate("rejected", reset, "five_hour", map[string]any{"utilization": 1.0}),
		ccAssistant(ccRome, "rate_limit"),
		ccResult(true, "success", ccRome, 429),
	)
	return []byte(lines(ls...))
}

func BenchmarkClassifyAuto(b *testing.B) {
	stdout := claudeFailedStream()
	loc := zone(b, "Europe/Rome")
	b.SetBytes(int64(len(stdout)))
	b.ReportAllocs()
	for b.Loop() {
		out := ClassifyAuto(1, stdout, nil, now, loc)
		if out.Class != provider.ClassQuota || out.Provider != ProviderClaudeCode {
			b.Fatalf("got %+v", out)
		}
	}
}

func BenchmarkClassifyClaudeCode(b *testing.B) {
	stdout := claudeFailedStream()
	loc := zone(b, "Europe/Rome")
	b.SetBytes(int64(len(stdout)))
	b.ReportAllocs()
	for b.Loop() {
		if out := ClassifyClaudeCode(1, stdout, nil, now, loc); out.Class != provider.ClassQuota {
			b.Fatalf("got %+v", out)
		}
	}
}
