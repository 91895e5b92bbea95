package result

import (
	"strings"
	"testing"
)

// A signed line reads back as the event it carries, only with its key;
// the same line read without a key, or a plain event read with one, is
// no valid event.
func TestSignedEvents(t *testing.T) {
	key := NewKey()
	if len(key) != 64 || key == NewKey() {
		t.Fatalf("keys: %q", key)
	}
	ev := Event{Event: "result", Result: &Result{Status: OK, Observations: []Observation{{Metric: "x", Value: 1.5, Unit: "u", Better: Higher}}}}
	line := ev.Line(key)
	if !strings.HasSuffix(string(line), "\n") || strings.Count(string(line), "\n") != 1 {
		t.Fatalf("not one line: %q", line)
	}
	got, v := ReadEvent(line, key)
	if v != Valid || got.Result == nil || got.Result.Observations[0].Value != 1.5 {
		t.Errorf("own key: %v %+v", v, got)
	}
	if _, v := ReadEvent(line, NewKey()); v != Forged {
		t.Errorf("another key: %v", v)
	}
	if _, v := ReadEvent(ev.Line(""), key); v != Forged {
		t.Errorf("a plain event where a signed one is due: %v", v)
	}
	if _, ok := ParseEvent(ev.Line("")); !ok {
		t.Errorf("a plain event with no key expected")
	}
	for _, s := range []string{"", "hello", `{"rate": 3}`, "\xff\xfe", `{"event":`, `[1,2]`} {
		if _, v := ReadEvent([]byte(s), key); v != NotEvent {
			t.Errorf("%q: %v, want no event", s, v)
		}
	}
}
