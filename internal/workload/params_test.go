package workload

import (
	"math"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	cases := []struct {
		p       Param
		in, out string
		errHas  string
	}{
		{P("d", Duration, "1s", ""), "1500ms", "1.5s", ""},
		{P("d", Duration, "1s", ""), "5 seconds", "", "is not a duration"},
		{P("d", Duration, "1s", "").Range(1, 10), "500ms", "", "out of range"},
		{P("s", Size, "1", ""), "64KiB", "65536", ""},
		{P("i", Int, "1", "").Range(1, 4), "5", "", "from 1 to 4"},
		{P("i", Int, "1", ""), "2.5", "", "not an integer"},
		{P("f", Float, "1", ""), "NaN", "", "not a number"},
		{P("b", Bool, "true", ""), "yes", "", "true or false"},
		{P("b", Bool, "true", ""), "1", "true", ""},
		{P("e", Enum, "a", "").OneOf("a", "b"), "c", "", "one of a, b"},
		{P("r", String, "1G", "").Matching(`[0-9]+[KMG]?`, "a rate"), "1.5X", "", "not a rate"},
		{P("r", String, "1G", "").Matching(`[0-9]+[KMG]?`, "a rate"), "100M", "100M", ""},
		{P("t", Int, "1", "").Range(1, 8).OrAuto(), " auto ", "auto", ""},
		{P("t", Int, "1", "").Range(1, 8).OrAuto(), "4", "4", ""},
		{P("t", Int, "1", "").Range(1, 8).OrAuto(), "0", "", "from 1 to 8, or auto"},
		{P("t", Int, "1", "").Range(1, 8).OrAuto(), "Auto", "", "from 1 to 8, or auto"},
		{P("t", Int, "1", "").Range(1, 8), "auto", "", "not an integer from 1 to 8"},
	}
	for _, c := range cases {
		got, err := c.p.Normalize(c.in)
		switch {
		case c.errHas == "" && (err != nil || got != c.out):
			t.Errorf("%s %q: got %q, %v; want %q", c.p.Kind, c.in, got, err, c.out)
		case c.errHas != "" && (err == nil || !strings.Contains(err.Error(), c.errHas)):
			t.Errorf("%s %q: got %v, want an error with %q", c.p.Kind, c.in, err, c.errHas)
		}
	}
}

// A parameter marked OrAuto resolves auto to itself, for the workload to
// resolve as it runs; Values tell it from a number.
func TestAuto(t *testing.T) {
	s := &Spec{Type: "x.y", Params: []Param{P("threads", Int, "1", "").Range(1, 8).OrAuto()}}
	v, errs := s.Resolve(map[string]string{"threads": "auto"})
	if errs != nil || !v.IsAuto("threads") || v.Int("threads") != 0 {
		t.Fatalf("auto: got %v %v", v, errs)
	}
	v, errs = s.Resolve(nil)
	if errs != nil || v.IsAuto("threads") || v.Int("threads") != 1 {
		t.Fatalf("default: got %v %v", v, errs)
	}
}

func TestResolve(t *testing.T) {
	s := &Spec{Type: "x.y", Params: []Param{P("n", Int, "3", "").Range(1, math.NaN()), P("d", Duration, "1s", "")}}
	v, errs := s.Resolve(map[string]string{"n": "7"})
	if errs != nil || v.Int("n") != 7 || v.Duration("d").Seconds() != 1 {
		t.Fatalf("got %v %v", v, errs)
	}
	_, errs = s.Resolve(map[string]string{"n": "0", "colour": "blue"})
	if len(errs) != 2 || !strings.Contains(errs["colour"].Error(), "allowed: n, d") || !strings.Contains(errs["n"].Error(), "at least 1") {
		t.Fatalf("errors %v", errs)
	}
}
