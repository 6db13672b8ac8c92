package fake

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// maxLLMBody bounds how much of a request body the fake reads to learn
// whether it asks for a stream.
const maxLLMBody = 1 << 20

// StreamDelta is the text of a streamed answer's i-th content delta (from
// 0), so a test can check a stream arrived whole and in order.
func StreamDelta(i int) string { return "part " + strconv.Itoa(i) + "; " }

// wantsStream reports whether r asks for a streamed answer and, for Gemini,
// whether as server-sent events (alt=sse) rather than a streamed JSON array.
// Anthropic and OpenAI ask with "stream": true in the body, which it reads
// (up to maxLLMBody); Gemini with the :streamGenerateContent method.
func (l *LLM) wantsStream(r *http.Request) (stream, sse bool) {
	if l.cfg.Kind == Gemini {
		if strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
			return true, r.URL.Query().Get("alt") == "sse"
		}
		return false, false
	}
	if r.Body == nil {
		return false, false
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxLLMBody))
	if err != nil {
		return false, false
	}
	var body struct {
		Stream bool `json:"stream"`
	}
	// A body that is not JSON asks for no stream; the fake answers it as
	// any other request.
	_ = json.Unmarshal(data, &body)
	return body.Stream, true
}

// stream writes a streamed success in the provider's event format, flushing
// each event, and reports whether it was written whole (false when the
// client went away first). The limit headers are already set.
//
//   - Anthropic: message_start, content_block_start, ping, one
//     content_block_delta (text_delta) per delta, content_block_stop,
//     message_delta (stop_reason end_turn, the output tokens), message_stop;
//     each as "event: NAME" and "data: JSON".
//   - OpenAI: "data: CHUNK" lines of chat.completion.chunk objects: the
//     first with the assistant role and empty content, one per delta, one
//     with finish_reason stop, then "data: [DONE]".
//   - Gemini: one GenerateContentResponse per delta, the last with
//     finishReason STOP and the usage, as "data: JSON" events (alt=sse) or
//     as the elements of a JSON array written as they come.
//
// Departures: no tool-use or thinking blocks, fixed ids and usage, and an
// OpenAI request's stream_options are ignored.
func (l *LLM) stream(w http.ResponseWriter, r *http.Request, sse bool) bool {
	h := w.Header()
	if sse {
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// The headers go out before the first event, as the real APIs send
	// them, so a client sees the answer begin while a gate holds it.
	if rc.Flush() != nil {
		return false
	}
	send := func(frame string) bool {
		if _, err := io.WriteString(w, frame); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	gate := func() bool {
		if l.cfg.StreamGate == nil {
			return r.Context().Err() == nil
		}
		select {
		case <-l.cfg.StreamGate:
			return true
		case <-r.Context().Done():
			return false
		}
	}
	n := l.cfg.StreamEvents
	switch l.cfg.Kind {
	case Anthropic:
		event := func(name string, v any) string {
			return "event: " + name + "\ndata: " + string(mustJSON(v)) + "\n\n"
		}
		head := event("message_start", ordered{{"type", "message_start"}, {"message", ordered{
			{"id", "msg_fake"}, {"type", "message"}, {"role", "assistant"}, {"model", l.cfg.Model},
			{"content", []any{}}, {"stop_reason", nil}, {"stop_sequence", nil},
			{"usage", ordered{{"input_tokens", 10}, {"output_tokens", 1}}}}}}) +
			event("content_block_start", ordered{{"type", "content_block_start"}, {"index", 0},
				{"content_block", ordered{{"type", "text"}, {"text", ""}}}}) +
			event("ping", ordered{{"type", "ping"}})
		if !send(head) {
			return false
		}
		for i := range n {
			if !gate() || !send(event("content_block_delta", ordered{{"type", "content_block_delta"}, {"index", 0},
				{"delta", ordered{{"type", "text_delta"}, {"text", StreamDelta(i)}}}})) {
				return false
			}
		}
		return send(event("content_block_stop", ordered{{"type", "content_block_stop"}, {"index", 0}}) +
			event("message_delta", ordered{{"type", "message_delta"},
				{"delta", ordered{{"stop_reason", "end_turn"}, {"stop_sequence", nil}}},
				{"usage", ordered{{"output_tokens", n}}}}) +
			event("message_stop", ordered{{"type", "message_stop"}}))
	case OpenAI:
		chunk := func(delta ordered, finish any) string {
			return "data: " + string(mustJSON(ordered{{"id", "chatcmpl-fake"}, {"object", "chat.completion.chunk"},
				{"created", l.cfg.Now().Unix()}, {"model", l.cfg.Model}, {"system_fingerprint", "fp_fake"},
				{"choices", []any{ordered{{"index", 0}, {"delta", delta}, {"logprobs", nil}, {"finish_reason", finish}}}}})) + "\n\n"
		}
		if !send(chunk(ordered{{"role", "assistant"}, {"content", ""}, {"refusal", nil}}, nil)) {
			return false
		}
		for i := range n {
			if !gate() || !send(chunk(ordered{{"content", StreamDelta(i)}}, nil)) {
				return false
			}
		}
		return send(chunk(ordered{}, "stop") + "data: [DONE]\n\n")
	default:
		if !sse && !send("[") {
			return false
		}
		for i := range n {
			cand := ordered{{"content", ordered{{"parts", []any{ordered{{"text", StreamDelta(i)}}}}, {"role", "model"}}}}
			if i == n-1 {
				cand = append(cand, kv{"finishReason", "STOP"})
			}
			resp := ordered{{"candidates", []any{append(cand, kv{"index", 0})}},
				{"usageMetadata", ordered{{"promptTokenCount", 10}, {"candidatesTokenCount", i + 1}, {"totalTokenCount", 11 + i}}},
				{"modelVersion", l.cfg.Model}}
			frame := string(mustJSON(resp))
			switch {
			case sse:
				frame = "data: " + frame + "\r\n\r\n"
			case i > 0:
				frame = ",\r\n" + frame
			}
			if !gate() || !send(frame) {
				return false
			}
		}
		return sse || send("]")
	}
}
