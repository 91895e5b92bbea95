package report

import (
	"math"
	"testing"
)

func TestSig(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{0, "0"},
		{1, "1.000"},
		{-2.5, "-2.500"},
		{3.14159, "3.142"},
		{9.9996, "10.00"}, // rounding carries into the next decade
		{99.996, "100.0"},
		{1011.2, "1011"},
		{123456.7, "123500"},
		{1.182e9, "1182000000"},
		{0.0012345, "0.001234"},
		{0.00012325, "0.0001232"}, // the float64 is just below ...25
		{0.00001708, "1.708e-05"},
		{2.5e12, "2.5e+12"},
		{math.NaN(), "-"},
		{math.Inf(1), "-"},
	}
	for _, tc := range tests {
		if got := Sig(tc.v); got != tc.want {
			t.Errorf("Sig(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
	if got := signed(1.5); got != "+1.500" {
		t.Errorf("signed(1.5) = %q", got)
	}
	if got := signed(-1.5); got != "-1.500" {
		t.Errorf("signed(-1.5) = %q", got)
	}
}
