package engine

import "testing"

func TestEndsTogetherDeadlock(t *testing.T) {
	for v, want := range map[string]bool{
		"20.10.24+dfsg1": true, // Debian bookworm's docker.io
		"20.10.26":       true,
		"20.10.27":       false, // moby/libnetwork#2679
		"19.03.15":       true,
		"23.0.0":         false, // moby/moby#42545
		"28.2.2":         false,
		"v29.0.1":        false,
		"":               true, // unknown: the safe side
		"dev":            true,
	} {
		if got := EndsTogetherDeadlock(v); got != want {
			t.Errorf("EndsTogetherDeadlock(%q) = %v, want %v", v, got, want)
		}
	}
	if (Facts{Podman: true, Versions: map[string]string{"docker.version": "4.3.1"}}).EndOneAtATime() {
		t.Error("podman's service has no libnetwork to deadlock")
	}
}

func TestPrivilegesFor(t *testing.T) {
	lacking := Privileges{Missing: []string{"CAP_SYS_RESOURCE"}}
	if p := lacking.For("20.10.24+dfsg1"); p.Privileged {
		t.Error("Docker 20.10 asks for every capability the kernel knows: --privileged fails where the bounding set lacks one")
	}
	if p := lacking.For("28.2.2"); !p.Privileged || p.String() != "privileged (the engine leaves out CAP_SYS_RESOURCE, which the bounding set lacks)" {
		t.Errorf("Docker 28 refuses to drop a capability the bounding set lacks, and gives a privileged container what it has: %+v %s", p, p)
	}
	if p := (Privileges{Privileged: true}).For("20.10.24"); !p.Privileged || p.String() != "privileged" {
		t.Errorf("a machine with every capability: %+v", p)
	}
}

func TestLoadedNames(t *testing.T) {
	out := []byte(`{"stream":"Loaded image: docker.io/library/ctrbench-agent:probe\n"}` + "\n" + `{"stream":"Loaded image: localhost/x:1\n"}`)
	got := loadedNames(out)
	if len(got) != 2 || got[0] != "docker.io/library/ctrbench-agent:probe" || got[1] != "localhost/x:1" {
		t.Fatalf("loadedNames = %q", got)
	}
	for tag, want := range map[string]string{"ctrbench-agent:probe": "docker.io/library/ctrbench-agent:probe", "x:1": "localhost/x:1", "y:2": ""} {
		if n := LoadedAs(got, tag); n != want {
			t.Errorf("LoadedAs(%q) = %q, want %q", tag, n, want)
		}
	}
}
