package result

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Signed events. The orchestrator gives each agent a key of its own for
// one trial (never on the command line, which every process can read);
// the agent signs every event line with it. A line on the agent's output
// that is not signed with that key, whoever wrote it (a workload that
// found the agent's stdout, a neighbour, a forged "result" in a tool's
// output), is never taken for an event: it is a forgery, and the trial
// that sees one fails saying so.
//
// A signed line is {"mac":"<hex HMAC-SHA256 over ev's bytes>","ev":EVENT}:
// the MAC covers the event's bytes exactly as written, so nothing has to
// be encoded the same way twice.
type signedLine struct {
	MAC string          `json:"mac"`
	Ev  json.RawMessage `json:"ev"`
}

// NewKey is a fresh random key for one agent, as text (an environment
// variable's value).
func NewKey() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error()) // never on Linux
	}
	return hex.EncodeToString(b)
}

func mac(key string, b []byte) []byte {
	m := hmac.New(sha256.New, []byte(key))
	m.Write(b)
	return m.Sum(nil)
}

// Line is the event as one line of the agent's output (newline ended),
// signed with key; with no key, the plain event (an agent run by hand).
func (e Event) Line(key string) []byte {
	b, _ := json.Marshal(e)
	if key != "" {
		b, _ = json.Marshal(signedLine{MAC: hex.EncodeToString(mac(key, b)), Ev: b})
	}
	return append(b, '\n')
}

// Verdict is what a line of an agent's output is.
type Verdict int

const (
	NotEvent Verdict = iota // output that is no event (kept for failure reports)
	Valid                   // an event the agent signed (or any event, with no key)
	Forged                  // looks like an event, and the key did not sign it
)

// ReadEvent reads one line of an agent's output that was started with
// key ("" accepts plain events: an agent run by hand).
func ReadEvent(line []byte, key string) (Event, Verdict) {
	var e Event
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return e, NotEvent
	}
	if key == "" {
		if err := json.Unmarshal(line, &e); err != nil || e.Event == "" {
			return Event{}, NotEvent
		}
		return e, Valid
	}
	var s signedLine
	if err := json.Unmarshal(line, &s); err != nil || (s.MAC == "" && len(s.Ev) == 0) {
		// Not the envelope: a plain event is a forgery, anything else
		// is a workload's JSON.
		if json.Unmarshal(line, &e) == nil && e.Event != "" {
			return Event{}, Forged
		}
		return Event{}, NotEvent
	}
	want, err := hex.DecodeString(s.MAC)
	if err != nil || !hmac.Equal(want, mac(key, s.Ev)) {
		return Event{}, Forged
	}
	if err := json.Unmarshal(s.Ev, &e); err != nil || e.Event == "" {
		return Event{}, Forged
	}
	return e, Valid
}

// ParseEvent decodes one line of an unsigned agent's output; ok is false
// for lines that are not events.
func ParseEvent(line []byte) (Event, bool) {
	e, v := ReadEvent(line, "")
	return e, v == Valid
}
