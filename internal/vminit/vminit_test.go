package vminit

import (
	"slices"
	"testing"
)

func TestConfigRoundTrip(t *testing.T) {
	c := Config{Args: []string{"agent", "run", "--params", `{"a b": "c=d"}`}, Address: "198.18.203.2/24", Gateway: "198.18.203.1", Disk: "/dev/vda"}
	got, err := Decode("console=ttyS0 quiet " + Param + "=" + c.Encode() + " -- agent vm\n")
	if err != nil || !slices.Equal(got.Args, c.Args) || got.Address != c.Address || got.Gateway != c.Gateway || got.Disk != c.Disk {
		t.Fatalf("got %+v, %v", got, err)
	}
	if _, err := Decode("console=ttyS0"); err == nil {
		t.Error("a command line without the parameter was accepted")
	}
}

func TestParseExit(t *testing.T) {
	for console, want := range map[string]int{
		"[ 1.0] boot\r\nctrbench: error\r\n\r\n" + ExitLine + "3\r\n[ 2.0] reboot: Power down\r\n": 3,
		"\n" + ExitLine + "0\n": 0,
	} {
		if code, ok := ParseExit(console); !ok || code != want {
			t.Errorf("%q: %d %v, want %d", console, code, ok, want)
		}
	}
	if _, ok := ParseExit("Kernel panic - not syncing"); ok {
		t.Error("an exit code found where none was written")
	}
}
