package vocab

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]Size{
		"0": 0, "4096": 4096, "1KB": 1000, "1KiB": 1024, "64KiB": 65536, "1.5MB": 1500000,
		"1MiB": 1 << 20, "2GiB": 2 << 30, "1 MB": 1000000, "10b": 10, "1kib": 1024,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "KiB", "12 parsecs", "1e3", "-5"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}

func TestSizeString(t *testing.T) {
	for n, want := range map[Size]string{0: "0B", 1024: "1KiB", 65536: "64KiB", 1000: "1000B", 3 << 30: "3GiB"} {
		if got := n.String(); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

// One parser for rates: the file's check (spec) and the shaper (netlab)
// accept the same spellings — they once disagreed on "10mbps".
func TestParseRate(t *testing.T) {
	for in, want := range map[string]uint64{
		"1gbit": 125_000_000, "100mbit": 12_500_000, "500kbit": 62_500, "1.5mbit": 187_500,
		"10mbps": 10_000_000, "1Gbit": 125_000_000, "8000": 1000, "1mibit": 131_072,
		"none": 0, "": 0,
	} {
		got, err := ParseRate(in)
		if err != nil || got.BytesPerSec() != want || got.String() != in || got.Unlimited() != (want == 0) {
			t.Errorf("ParseRate(%q) = %d %q %v, %v; want %d", in, got.BytesPerSec(), got.String(), got.Unlimited(), err, want)
		}
	}
	for _, bad := range []string{"fast", "1gbitz", "-1mbit", "0mbit", "7kbit", "1bit", "mbit", "1e9bit", "10 furlongs"} {
		if r, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) accepted: %d", bad, r.BytesPerSec())
		}
	}
}

func TestParsePercent(t *testing.T) {
	for in, want := range map[string]float64{"2%": 0.02, "0.5%": 0.005, " 10% ": 0.1} {
		if got, err := ParsePercent(in); err != nil || got != want {
			t.Errorf("ParsePercent(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"2", "%", "two%", "2 %"} {
		if _, err := ParsePercent(bad); err == nil {
			t.Errorf("ParsePercent(%q) accepted", bad)
		}
	}
}
