package userimage

import (
	"strings"
	"testing"
)

func TestParseRegistry(t *testing.T) {
	for in, want := range map[string]Registry{
		"registry.example:5000/bench":    {Host: "registry.example:5000", Prefix: "bench"},
		"https://registry.example/a/b/":  {Host: "registry.example", Prefix: "a/b"},
		"http://198.18.240.1:5000":       {Host: "198.18.240.1:5000", Insecure: true},
		"http://localhost:5000/ctrbench": {Host: "localhost:5000", Prefix: "ctrbench", Insecure: true},
	} {
		got, err := ParseRegistry(in)
		if err != nil || got != want {
			t.Errorf("ParseRegistry(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "http://", "registry.example/Bad_Prefix!"} {
		if _, err := ParseRegistry(bad); err == nil || !strings.Contains(err.Error(), "registry") {
			t.Errorf("ParseRegistry(%q): %v; want an error naming the registry", bad, err)
		}
	}
}
