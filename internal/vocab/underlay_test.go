package vocab

import (
	"strings"
	"testing"
	"time"
)

func TestParseUnderlay(t *testing.T) {
	for _, c := range []struct {
		in                string
		bits              float64
		delay, jitter     time.Duration
		loss              float64
		delays, unlimited bool
	}{
		{in: "", unlimited: true},
		{in: NoLimit, unlimited: true},
		{in: "1gbit", bits: 1e9},
		{in: "1gbit delay 24ms", bits: 1e9, delay: 24 * time.Millisecond, delays: true},
		{in: "rate 100mbit delay 10ms jitter 2ms loss 0.1%", bits: 1e8, delay: 10 * time.Millisecond, jitter: 2 * time.Millisecond, loss: 0.001, delays: true},
		{in: "1gbit loss 1%", bits: 1e9, loss: 0.01, delays: true},
	} {
		u, err := ParseUnderlay(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := float64(u.Rate.BytesPerSec()) * 8; got != c.bits || u.Delay != c.delay || u.Jitter != c.jitter || u.Loss != c.loss || u.Delays() != c.delays || u.Unlimited() != c.unlimited {
			t.Errorf("%q: got rate %g delay %v jitter %v loss %g delays %v unlimited %v", c.in, got, u.Delay, u.Jitter, u.Loss, u.Delays(), u.Unlimited())
		}
		if u.String() != c.in {
			t.Errorf("%q reads back as %q", c.in, u.String())
		}
	}
	for in, want := range map[string]string{
		"delay 24ms":                 "needs a rate",
		"10gbit delay 1ms":           "above the 1.5gbit",
		"1gbit delay 2ms jitter 2ms": "more than the one-way delay",
		"1gbit delay -1ms":           "want 0 to",
		"1gbit delay 11s":            "want 0 to",
		"1gbit loss 100%":            "below 100%",
		"1gbit loss 1":               "percentage",
		"1gbit delay soon":           "a duration",
		"1gbit latency 2ms":          `unknown part "latency"`,
		"1gbit delay 1ms delay 2ms":  "appears twice",
		"fast":                       "rate",
	} {
		if _, err := ParseUnderlay(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error containing %q", in, err, want)
		}
	}
}

func TestUnderlayWordsReadBack(t *testing.T) {
	w := UnderlayWords(map[string]string{"loss": "0.1%", "delay": "24ms", "rate": "1gbit", "jitter": "2ms"})
	if w != "1gbit delay 24ms jitter 2ms loss 0.1%" {
		t.Fatalf("words %q", w)
	}
	u, err := ParseUnderlay(w)
	if err != nil || u.Delay != 24*time.Millisecond || u.Jitter != 2*time.Millisecond || u.Loss != 0.001 {
		t.Errorf("%q reads as %+v, %v", w, u, err)
	}
}
