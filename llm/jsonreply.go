package llm

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/kaptinlin/jsonrepair"
)

// thinkBlock is a reasoning model's scratchpad, closed.
var thinkBlock = regexp.MustCompile(`(?is)<(?:think|thinking|reasoning)>.*?</(?:think|thinking|reasoning)>`)

// thinkClose and thinkOpen are the tags of a scratchpad left open on one
// side: opened in the prompt by the chat template (DeepSeek-R1, QwQ), or
// cut off by the token limit.
var (
	thinkClose = regexp.MustCompile(`(?is)^.*</(?:think|thinking|reasoning)>`)
	thinkOpen  = regexp.MustCompile(`(?is)<(?:think|thinking|reasoning)>.*$`)
)

// StripThinking removes a reasoning model's scratchpad from a reply:
// every <think>...</think> block (also <thinking> and <reasoning>), then
// everything up to a closing tag left without its opening one (the chat
// template opened it), then everything from an opening tag never closed
// (the reply was cut inside it). The rest is returned trimmed.
func StripThinking(reply string) string {
	s := thinkBlock.ReplaceAllString(reply, "")
	s = thinkClose.ReplaceAllString(s, "")
	s = thinkOpen.ReplaceAllString(s, "")
	return strings.TrimSpace(s)
}

// Bounds of the work ExtractJSON does on a reply: the model writes it.
const (
	maxJSONReply  = 64 << 10 // bytes of a reply searched
	maxJSONStarts = 64       // '{' tried as the start of the object
)

// ExtractJSON finds the JSON object a model wrote in its reply, for a
// reply asked for as JSON but not enforced as such. Its scratchpad is
// stripped first (StripThinking). The object may stand alone, sit in a
// ``` fence or in prose; the first that is valid JSON and has every key
// of required at its top level is taken. Failing that, the first that
// does once repaired: trailing commas, single quotes, unquoted keys,
// Python's True/False/None, comments, a reply cut before the closing
// brace. The object is returned compact; ok is false if there is none.
func ExtractJSON(reply string, required ...string) (obj json.RawMessage, ok bool) {
	s := StripThinking(reply)
	if len(s) > maxJSONReply {
		s = s[:maxJSONReply]
	}
	var starts []int
	for i := 0; i < len(s) && len(starts) < maxJSONStarts; i++ {
		if s[i] == '{' {
			starts = append(starts, i)
		}
	}
	for _, i := range starts {
		var raw json.RawMessage
		if json.NewDecoder(strings.NewReader(s[i:])).Decode(&raw) == nil && hasKeys(raw, required) {
			return compact(raw), true
		}
	}
	end := strings.LastIndexByte(s, '}')
	for _, i := range starts {
		candidate := s[i:]
		if end > i {
			candidate = s[i : end+1]
		}
		repaired, err := jsonrepair.Repair(candidate)
		if err == nil && strings.HasPrefix(repaired, "{") && hasKeys(json.RawMessage(repaired), required) {
			return compact(json.RawMessage(repaired)), true
		}
	}
	return nil, false
}

// hasKeys reports whether raw is a JSON object with every key of keys.
func hasKeys(raw json.RawMessage, keys []string) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return false
	}
	for _, k := range keys {
		if _, ok := obj[k]; !ok {
			return false
		}
	}
	return true
}

// compact returns raw without insignificant space.
func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}
