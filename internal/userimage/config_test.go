package userimage

import (
	"errors"
	"reflect"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// command: replaces ENTRYPOINT and CMD both; without it ENTRYPOINT then CMD
// run, as docker run IMAGE runs them.
func TestCommand(t *testing.T) {
	cases := []struct {
		name            string
		entrypoint, cmd []string
		command, want   []string
	}{
		{"entrypoint and cmd", []string{"/app"}, []string{"--flag"}, nil, []string{"/app", "--flag"}},
		{"cmd alone", nil, []string{"/bin/sh", "-c", "x"}, nil, []string{"/bin/sh", "-c", "x"}},
		{"entrypoint alone", []string{"/app"}, nil, nil, []string{"/app"}},
		{"command replaces both", []string{"/app"}, []string{"--flag"}, []string{"/other", "-v"}, []string{"/other", "-v"}},
	}
	for _, c := range cases {
		cfg := Config{Entrypoint: c.entrypoint, Cmd: c.cmd}
		got, err := cfg.Command(c.command)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Command(%q) = %q, %v; want %q", c.name, c.command, got, err, c.want)
		}
	}
	if _, err := (Config{}).Command(nil); !errors.Is(err, ErrNoCommand) {
		t.Errorf("neither ENTRYPOINT, CMD nor command: err = %v, want ErrNoCommand", err)
	}
	cfg := Config{Entrypoint: []string{"/app"}, Cmd: []string{"a"}}
	got, _ := cfg.Command(nil)
	got[0] = "changed"
	if cfg.Entrypoint[0] != "/app" {
		t.Errorf("changing Command's result changed the image's ENTRYPOINT")
	}
}

func TestPath(t *testing.T) {
	if got := (Config{Env: []string{"A=1"}}).Path(); got != DefaultPath {
		t.Errorf("no PATH in the image: Path() = %q, want DefaultPath", got)
	}
	if got := (Config{Env: []string{"PATH=/a", "PATH=/b:/c"}}).Path(); got != "/b:/c" {
		t.Errorf("Path() = %q, want the last setting /b:/c", got)
	}
}

func TestExposedPorts(t *testing.T) {
	cf := &v1.ConfigFile{Config: v1.Config{ExposedPorts: map[string]struct{}{"80/tcp": {}, "80": {}, "53/UDP": {}, "7-8/sctp": {}}}}
	c, err := configOf(cf)
	if err != nil {
		t.Fatal(err)
	}
	want := []Port{{7, "sctp"}, {8, "sctp"}, {53, "udp"}, {80, "tcp"}}
	if !reflect.DeepEqual(c.ExposedPorts, want) {
		t.Errorf("ExposedPorts = %v, want %v", c.ExposedPorts, want)
	}
	if want[3].String() != "80/tcp" {
		t.Errorf("Port.String() = %q, want 80/tcp", want[3].String())
	}
	for _, bad := range []string{"http", "0/tcp", "70000", "80/icmp", "9-8/tcp", "1-x"} {
		cf := &v1.ConfigFile{Config: v1.Config{ExposedPorts: map[string]struct{}{bad: {}}}}
		if _, err := configOf(cf); err == nil {
			t.Errorf("exposed port %q: no error, want one", bad)
		}
	}
}
