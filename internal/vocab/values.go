package vocab

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The values experiment files spell with units, parsed once (by spec, as
// it validates a file) into these types; plan, netlab and the drivers
// receive the type, never the text.

// Size is a number of bytes (a memory limit, a block I/O throttle per
// second, a workload's message or file size).
type Size int64

var sizeUnits = map[string]int64{
	"": 1, "B": 1,
	"K": 1000, "KB": 1000, "M": 1000 * 1000, "MB": 1000 * 1000, "G": 1e9, "GB": 1e9, "T": 1e12, "TB": 1e12,
	"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40,
}

// ParseSize parses "4096", "64KiB", "1.5MB" into bytes (KB = 1000, KiB = 1024).
func ParseSize(s string) (Size, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("size %q has no number", s)
	}
	f, err := strconv.ParseFloat(s[:i], 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	mult, ok := sizeUnits[strings.ToUpper(strings.TrimSpace(s[i:]))]
	if !ok {
		return 0, fmt.Errorf("size %q has an unknown unit (use B, KB, MB, GB, KiB, MiB, GiB)", s)
	}
	v := f * float64(mult)
	if v > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return Size(math.Round(v)), nil
}

// String renders the size with a binary unit when exact, else in bytes.
func (n Size) String() string {
	for _, u := range []struct {
		s string
		v Size
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return fmt.Sprintf("%d%s", n/u.v, u.s)
		}
	}
	return fmt.Sprintf("%dB", int64(n))
}

// Rate is a link's shaping rate, as tc spells it ("100mbit", "1gbit", or
// bytes: "10mbps"); the zero Rate is unlimited. It keeps the file's
// spelling for reports.
type Rate struct {
	bytesPerSec uint64
	text        string
}

// rateBits are the units of a rate, in bits: tc's bit units (decimal and
// binary) and its byte units (bps = 8 bit/s).
var rateBits = map[string]float64{
	"": 1, "bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
	"kibit": 1 << 10, "mibit": 1 << 20, "gibit": 1 << 30, "tibit": 1 << 40,
	"bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9, "tbps": 8e12,
	"kibps": 8 << 10, "mibps": 8 << 20, "gibps": 8 << 30, "tibps": 8 << 40,
}

// ParseRate parses a rate: NoLimit or "" is unlimited; else a positive
// number and one of tc's units (a bare number is bit/s), at least 8kbit.
func ParseRate(s string) (Rate, error) {
	if s == "" || s == NoLimit {
		return Rate{text: s}, nil
	}
	t := strings.ToLower(strings.TrimSpace(s))
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], t[i:]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 {
		return Rate{}, fmt.Errorf("rate %q: want a positive number and a unit like 100mbit", s)
	}
	mult, ok := rateBits[unit]
	if !ok {
		return Rate{}, fmt.Errorf("rate %q: unknown unit %q (use bit, kbit, mbit, gbit or bps, kbps, mbps, gbps)", s, unit)
	}
	bytes := v * mult / 8
	if bytes < 1000 {
		return Rate{}, fmt.Errorf("rate %q: below 8kbit", s)
	}
	return Rate{bytesPerSec: uint64(bytes), text: s}, nil
}

// BytesPerSec is the rate in bytes per second, 0 when unlimited.
func (r Rate) BytesPerSec() uint64 { return r.bytesPerSec }

// Unlimited reports whether the rate shapes nothing.
func (r Rate) Unlimited() bool { return r.bytesPerSec == 0 }

// String is the rate as the file spelled it ("" or NoLimit when unlimited).
func (r Rate) String() string { return r.text }

// ParsePercent parses a percentage such as "2%" (the sign required) into
// a fraction (0.02).
func ParsePercent(s string) (float64, error) {
	t := strings.TrimSpace(s)
	num, ok := strings.CutSuffix(t, "%")
	if !ok {
		return 0, fmt.Errorf("percentage %q: want a number and %%, such as 2%%", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("percentage %q: want a number and %%, such as 2%%", s)
	}
	return v / 100, nil
}
