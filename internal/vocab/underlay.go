package vocab

import (
	"fmt"
	"strings"
	"time"
)

// Underlay is what the links between emulated hosts do to every packet:
// their rate, and the delay, jitter and loss a round trip between two
// hosts meets. A level spells it as tc does, in words: "1gbit",
// "1gbit delay 24ms jitter 2ms loss 0.1%" (every part optional, the rate
// first); experiment files may also write the mapping {rate: 1gbit,
// delay: 24ms, jitter: 2ms, loss: 0.1%}, read into the same words.
type Underlay struct {
	Rate Rate
	// Delay is what a round trip between two emulated hosts gains (as
	// ping sees it): half is added to every packet a host sends.
	Delay time.Duration
	// Jitter is the standard deviation of each packet's one-way delay
	// (about Delay/2); packets keep their order.
	Jitter time.Duration
	// Loss is the fraction of the packets a host sends that are lost.
	Loss float64
	text string
}

// UnderlayKeys are the parts of an underlay, in the order its words list
// them.
var UnderlayKeys = []string{"rate", "delay", "jitter", "loss"}

// MaxUnderlayDelay is the longest round-trip delay an underlay adds.
const MaxUnderlayDelay = 10 * time.Second

// MaxDelayedRateBits is the fastest rate, in bit/s, of an underlay that
// delays, jitters or loses packets: what ctrbench's userspace delay line
// carries on a 2-core machine with room to spare (its ceiling measured
// there is in docs/networks.md, "Delay, jitter and loss").
const MaxDelayedRateBits = 1.5e9

// ParseUnderlay parses an underlay level: NoLimit or "" (nothing), a rate
// alone, or a rate (or "rate R") followed by any of "delay D", "jitter D",
// "loss P%".
func ParseUnderlay(s string) (Underlay, error) {
	u := Underlay{text: s}
	words := strings.Fields(s)
	if len(words)%2 == 1 { // a rate with no keyword first
		words = append([]string{"rate"}, words...)
	}
	seen := map[string]bool{}
	for i := 0; i < len(words); i += 2 {
		key, val := strings.ToLower(words[i]), words[i+1]
		if seen[key] {
			return Underlay{}, fmt.Errorf("underlay %q: %s appears twice", s, key)
		}
		seen[key] = true
		var err error
		switch key {
		case "rate":
			u.Rate, err = ParseRate(val)
		case "delay", "jitter":
			var d time.Duration
			d, err = time.ParseDuration(val)
			switch {
			case err != nil:
				err = fmt.Errorf("%s %q: want a duration such as 24ms", key, val)
			case d < 0 || d > MaxUnderlayDelay:
				err = fmt.Errorf("%s %s: want 0 to %v", key, val, MaxUnderlayDelay)
			case key == "delay":
				u.Delay = d
			default:
				u.Jitter = d
			}
		case "loss":
			u.Loss, err = ParsePercent(val)
			if err == nil && (u.Loss < 0 || u.Loss >= 1) {
				err = fmt.Errorf("loss %s: want at least 0%% and below 100%%", val)
			}
		default:
			return Underlay{}, fmt.Errorf("underlay %q: unknown part %q (want a rate, then any of delay, jitter, loss)", s, words[i])
		}
		if err != nil {
			return Underlay{}, fmt.Errorf("underlay %q: %w", s, err)
		}
	}
	if u.Jitter > u.Delay/2 {
		return Underlay{}, fmt.Errorf("underlay %q: jitter %v is more than the one-way delay it varies (delay/2 = %v)", s, u.Jitter, u.Delay/2)
	}
	if u.Delays() {
		if u.Rate.Unlimited() {
			return Underlay{}, fmt.Errorf("underlay %q: an underlay that delays, jitters or loses packets needs a rate (at most %s): its packets cross ctrbench's delay line, whose own ceiling would otherwise be the rate", s, bitsText(MaxDelayedRateBits))
		}
		if float64(u.Rate.BytesPerSec())*8 > MaxDelayedRateBits {
			return Underlay{}, fmt.Errorf("underlay %q: rate %s is above the %s the delay line carries", s, u.Rate, bitsText(MaxDelayedRateBits))
		}
	}
	return u, nil
}

// UnderlayWords renders an underlay's parts (keys of UnderlayKeys, values
// as the file spelt them) as a level: "1gbit delay 24ms loss 0.1%".
func UnderlayWords(parts map[string]string) string {
	var w []string
	for _, k := range UnderlayKeys {
		v, ok := parts[k]
		if !ok {
			continue
		}
		if k != "rate" {
			w = append(w, k)
		}
		w = append(w, v)
	}
	return strings.Join(w, " ")
}

func bitsText(b float64) string { return fmt.Sprintf("%ggbit", b/1e9) }

// Delays reports whether the underlay delays, jitters or loses packets.
func (u Underlay) Delays() bool { return u.Delay > 0 || u.Jitter > 0 || u.Loss > 0 }

// Unlimited reports whether the underlay does nothing to packets.
func (u Underlay) Unlimited() bool { return u.Rate.Unlimited() && !u.Delays() }

// String is the underlay as the file spelled it.
func (u Underlay) String() string { return u.text }
