package agentcli

import (
	"strings"
	"testing"

	"github.com/layoverhq/layover/internal/fuzzbound"
)

const (
	sxThread  = "0199a213-81c0-7800-8aa1-bbab2a035a53"
	kmSession = "session_afb0b032-92bf-4de9-955d-438be76ff110"
	cpSession = "916524aa-24ae-406d-899a-698d2c19dd57"
	agConv    = "35c35ece-96ea-48d0-9348-044a911b116e"
	gmSession = "c1d2e3f4-0000-4000-8000-0000000000aa"
)

// sessionCases are outputs of each CLI naming (or not) a session.
var sessionCases = []struct {
	name, stdout, stderr, want string
}{
	{"claude stream-json", lines(ccInit(), ccResult(true, "success", ccRome, 429)), "", ccSession},
	{"claude json result", ccResult(true, "success", ccRome, 429), "", ccSession},
	{"codex exec --json", lines(`{"type":"thread.started","thread_id":"`+sxThread+`"}`, `{"type":"turn.started"}`, `{"type":"turn.failed","error":{"message":"x"}}`), "", sxThread},
	{"codex exec text header", "", "OpenAI Codex v0.45.0 (research preview)\n--------\nworkdir: /work\nmodel: gpt-5-codex\nsession id: " + sxThread + "\n--------\nERROR: You've hit your usage limit.\n", sxThread},
	{"codex thread_id outside thread.started", `{"type":"item.completed","thread_id":"` + sxThread + `"}` + "\n", "", ""},
	{"gemini stream-json init", lines(`{"type":"init","timestamp":"2026-08-05T12:00:00.000Z","session_id":"`+gmSession+`","model":"gemini-2.5-pro"}`, `{"type":"result","status":"error"}`), "", gmSession},
	{"gemini json, pretty", "{\n  \"session_id\": \"" + gmSession + "\",\n  \"response\": \"done\"\n}\n", "", gmSession},
	{"gemini json error on stderr", "", "{\n  \"session_id\": \"" + gmSession + "\",\n  \"error\": {\"type\": \"TerminalQuotaError\"}\n}\n", gmSession},
	{"copilot resume hint", "done\n", "Total usage est:       1 Premium request\nResume this session with copilot --resume=" + cpSession + "\n", cpSession},
	{"copilot json event", lines(`{"type":"session.start","data":{"sessionId":"`+cpSession+`"}}`, `{"type":"session.error","data":{"errorType":"quota"}}`), "", cpSession},
	{"copilot result sessionId", `{"type":"result","sessionId":"` + cpSession + `","exitCode":1}` + "\n", "", cpSession},
	{"kimi resume hint", "Error code: 429 - {}\n", "To resume this session: kimi -r " + kmSession + "\n", kmSession},
	{"antigravity stream-json", lines(`{"type":"init","conversation_id":"`+agConv+`"}`, `{"type":"result","conversation_id":"`+agConv+`","status":"error"}`), "", agConv},
	{"antigravity json camelCase", `{"conversationId":"` + agConv + `","status":"DONE","response":"done"}` + "\n", "", agConv},
	{"json beats text", `{"type":"system","subtype":"init","session_id":"` + ccSession + `"}` + "\n", "session id: " + sxThread + "\n", ccSession},
	{"a nested id does not count", `{"type":"user","message":{"content":[{"type":"tool_result","session_id":"` + sxThread + `"}]}}` + "\n", "", ""},
	{"a quoted hint inside a JSON line does not count", `{"type":"assistant","message":"session id: ` + sxThread + `"}` + "\n", "", ""},
	{"an id with shell in it", `{"type":"result","session_id":"a b; rm -rf /"}` + "\n", "session id: $(reboot)\n", ""},
	{"terminal escapes", "", "\x1b[2msession id:\x1b[0m " + sxThread + "\n", sxThread},
	{"nothing", "done\n", "", ""},
}

func TestSessionIDEveryCLI(t *testing.T) {
	t.Parallel()
	for _, tt := range sessionCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := SessionID([]byte(tt.stdout), []byte(tt.stderr)); got != tt.want {
				t.Errorf("SessionID = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSessionIDLongStreams(t *testing.T) {
	t.Parallel()
	filler := strings.Repeat("x", 2*maxScan) + "\n"
	// Codex prints its header first: past 64 KiB of progress, the head
	// of stderr still names the session.
	if got := SessionID(nil, []byte("session id: "+sxThread+"\n"+filler)); got != sxThread {
		t.Errorf("codex header before 128 KiB: %q", got)
	}
	// The tail wins over the head.
	out := `{"type":"thread.started","thread_id":"` + sxThread + `"}` + "\n" + filler + `{"type":"init","session_id":"` + gmSession + `"}` + "\n"
	if got := SessionID([]byte(out), nil); got != gmSession {
		t.Errorf("tail: %q", got)
	}
}

func FuzzSessionID(f *testing.F) {
	for _, c := range sessionCases {
		f.Add([]byte(c.stdout), []byte(c.stderr))
	}
	f.Fuzz(func(t *testing.T, stdout, stderr []byte) {
		fuzzbound.Run(t, func() {
			id := SessionID(stdout, stderr)
			if id != "" && !reSessionID().MatchString(id) {
				t.Fatalf("SessionID(%q, %q) = %q: not an id's shape", stdout, stderr, id)
			}
		})
	})
}
