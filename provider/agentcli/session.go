package agentcli

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
)

// reSessionID is the shape of a session id SessionID returns: what the six
// CLIs print (UUIDs, Codex's thread ids, Kimi's "session_<uuid>"), and
// nothing a shell would read as more than a word.
var reSessionID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`) })

// sessionKeys are the JSON fields that name a session, one of which a line
// must contain before it is decoded.
var sessionKeys = [][]byte{[]byte(`"session_id"`), []byte(`"thread_id"`), []byte(`"conversation_id"`), []byte(`"conversationId"`), []byte(`"sessionId"`)}

// reSessionText finds the session ids the CLIs print as text, one a line:
// Codex's header line "session id: <id>" (stderr of `codex exec`),
// Kimi's "To resume this session: kimi -r <id>", Copilot's "Resume this
// session with copilot --resume=<id>".
var reSessionText = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?im)^[ \t]*session[ _]id:[ \t]*([^\s]+)[ \t]*$|to resume this session:?[ \t]+kimi[ \t]+(?:-r|--resume|-S|--session)[ =]([^\s]+)|\bcopilot[ \t]+--resume[ =]([^\s]+)`)
})

// SessionID returns the session (thread, conversation) id an agent CLI's
// run printed, "" when it printed none that looks like one
// (docs/agents.md). It never panics and reads the last 64 KiB of each
// stream, then its first 64 KiB when the stream is longer and its tail
// names none. What it reads, the structured output first:
//
//   - Claude Code's stream-json events and json result: session_id (the
//     last event that carries one);
//   - Codex's `exec --json` thread.started event: thread_id;
//   - Gemini CLI's stream-json init event and json output: session_id;
//   - Antigravity's json and stream-json events: conversation_id (or
//     conversationId);
//   - Copilot CLI's JSON events: sessionId, top-level or in a session.*
//     event's data;
//
// stdout before stderr (Gemini CLI prints its json errors on stderr).
// Then texts, stderr before stdout, one a line: Codex's "session id: <id>"
// header, Kimi's "To resume this session: kimi -r <id>", Copilot's
// "copilot --resume=<id>". An id must match reSessionID; a JSON field
// nested in other fields (a tool's output, a quoted message) never counts.
func SessionID(stdout, stderr []byte) string {
	for _, b := range [][]byte{stdout, stderr} {
		if id := inStream(b, jsonSession); id != "" {
			return id
		}
	}
	for _, b := range [][]byte{stderr, stdout} {
		if id := inStream(b, textSession); id != "" {
			return id
		}
	}
	return ""
}

// inStream applies find to the last maxScan bytes of b (without terminal
// escapes), then to the first when b is longer and its tail names none.
func inStream(b []byte, find func([]byte) string) string {
	if id := find(clean(b)); id != "" || len(b) <= maxScan {
		return id
	}
	return find(clean(b[:maxScan]))
}

// jsonSession returns the last session id b's JSON names: b as one JSON
// array of events or one (pretty-printed) object, else each line that is
// a JSON object.
func jsonSession(b []byte) string {
	if !hasSessionKey(b) {
		return ""
	}
	id := ""
	if t := bytes.TrimSpace(b); len(t) > 0 && (t[0] == '[' || t[0] == '{') {
		var events []json.RawMessage
		if t[0] == '[' && json.Unmarshal(t, &events) == nil {
			for _, ev := range events {
				if s := eventSession(obj(ev)); s != "" {
					id = s
				}
			}
			return id
		}
		if o := obj(t); o != nil {
			return eventSession(o)
		}
	}
	eachLine(b, func(line []byte) {
		if !hasSessionKey(line) {
			return
		}
		if s := eventSession(jsonObject(line)); s != "" {
			id = s
		}
	})
	return id
}

func hasSessionKey(b []byte) bool {
	for _, k := range sessionKeys {
		if bytes.Contains(b, k) {
			return true
		}
	}
	return false
}

// eventSession returns the session id one event names at its top level
// (a session.* event's data too), "" when none valid.
func eventSession(o map[string]json.RawMessage) string {
	if o == nil {
		return ""
	}
	candidates := []json.RawMessage{o["session_id"], o["conversation_id"], o["conversationId"], o["sessionId"]}
	typ := str(o["type"])
	if typ == "thread.started" {
		candidates = append(candidates, o["thread_id"])
	}
	if strings.HasPrefix(typ, "session.") {
		if d := obj(o["data"]); d != nil {
			candidates = append(candidates, d["sessionId"])
		}
	}
	for _, raw := range candidates {
		if raw == nil {
			continue
		}
		if s := strings.TrimSpace(str(raw)); reSessionID().MatchString(s) {
			return s
		}
	}
	return ""
}

// textSession returns the last session id b prints as text, outside JSON
// lines.
func textSession(b []byte) string {
	lower := bytes.ToLower(b)
	if !bytes.Contains(lower, []byte("session")) && !bytes.Contains(lower, []byte("--resume")) {
		return ""
	}
	id := ""
	eachLine(b, func(line []byte) {
		if jsonObject(line) != nil {
			return
		}
		for _, m := range reSessionText().FindAllSubmatch(line, 4) {
			for _, g := range m[1:] {
				if s := strings.Trim(string(g), "'\"`.,;()"); len(g) > 0 && reSessionID().MatchString(s) {
					id = s
				}
			}
		}
	})
	return id
}
