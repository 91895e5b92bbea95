package spec

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in   string
		ncpu int
		want []int
		err  string
	}{
		{"0", 2, []int{0}, ""},
		{"1", 2, []int{1}, ""},
		{"0-1", 2, []int{0, 1}, ""},
		{"0,2-3", 4, []int{0, 2, 3}, ""},
		{" 0 , 1 ", 2, []int{0, 1}, ""},
		{"3-3", 4, []int{3}, ""},
		{"0-63", 0, nil, ""}, // machine unknown: any CPU
		{"5", 2, nil, "CPU 5 does not exist on this machine (CPUs 0-1)"},
		{"0-2", 2, nil, "CPU 2 does not exist"},
		{"0,7", 4, nil, "CPU 7 does not exist on this machine (CPUs 0-3)"},
		{"", 2, nil, "want CPU numbers"},
		{"a", 2, nil, "want CPU numbers"},
		{"-1", 2, nil, "want CPU numbers"},
		{"1-0", 2, nil, "want CPU numbers"},
		{"0-", 2, nil, "want CPU numbers"},
		{"0,,1", 2, nil, "want CPU numbers"},
		{"0-1-2", 4, nil, "want CPU numbers"},
	}
	for _, tc := range tests {
		got, err := parseCPUList(tc.in, tc.ncpu)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseCPUList(%q, %d) = %v, %v; want error %q", tc.in, tc.ncpu, got, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseCPUList(%q, %d): %v", tc.in, tc.ncpu, err)
			continue
		}
		if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseCPUList(%q, %d) = %v, want %v", tc.in, tc.ncpu, got, tc.want)
		}
	}
	if got, _ := parseCPUList("0-63", 0); len(got) != 64 {
		t.Errorf("0-63 has %d CPUs", len(got))
	}
}

func TestProblemString(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{File: "x.yaml", Line: 4, Col: 1, Msg: "bad"}, "x.yaml:4:1: bad"},
		{Problem{File: "x.yaml", Line: 7, Msg: "bad"}, "x.yaml:7: bad"},
		{Problem{File: "x.yaml", Set: "repetitions=0", Msg: "bad"}, "--set repetitions=0: bad"},
		{Problem{File: "x.yaml", Line: 3, Col: 2, Set: "a=b", Msg: "bad"}, "--set a=b: bad"},
		{Problem{File: "x.yaml", Msg: "bad"}, "x.yaml: bad"},
		{Problem{File: "x.yaml", Col: 5, Msg: "bad"}, "x.yaml: bad"},
	}
	for _, tc := range tests {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.p, got, tc.want)
		}
	}
}

func TestProblemsError(t *testing.T) {
	ps := Problems{
		{File: "f", Line: 9, Col: 3, Msg: "c"},
		{File: "f", Line: 2, Col: 8, Msg: "b"},
		{File: "f", Set: "x=1", Msg: "a"},
		{File: "f", Line: 2, Col: 1, Msg: "a2"},
		{File: "f", Line: 9, Col: 3, Msg: "c2"}, // same place: found order kept
	}
	want := "--set x=1: a\nf:2:1: a2\nf:2:8: b\nf:9:3: c\nf:9:3: c2"
	if got := ps.Error(); got != want {
		t.Errorf("Error() =\n%s\nwant\n%s", got, want)
	}
	if ps[0].Msg != "c" {
		t.Errorf("Error() reordered the Problems themselves")
	}
	var err error = ps
	if err.Error() != want {
		t.Errorf("Problems is not usable as an error")
	}
}
