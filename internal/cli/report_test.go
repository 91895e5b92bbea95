package cli

import (
	"bytes"
	"context"
	"testing"
)

// Input the user got wrong is exit 2 with a message saying what to give,
// before or after the campaign is read.
func TestReportBadInput(t *testing.T) {
	db := storedCopy(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--baseline", "layer=kvm"}, `ctrbench: --baseline "layer=kvm": want factor=level with a level the campaign ran` + "\n"},
		{[]string{"--baseline", "layer", "--matrix"}, `ctrbench: --baseline "layer": want factor=level with a level the campaign ran` + "\n"},
		{[]string{"--format", "xml"}, `ctrbench: unknown report format "xml" (allowed: benchfmt, csv, json, markdown, openmetrics, table)` + "\n"},
		{[]string{"--pooled", "--matrix"}, "ctrbench: --pooled prints percentiles; it does not combine with --failures or --matrix\n"},
		{[]string{"--pooled", "--format", "xml"}, `ctrbench: unknown report format "xml" (allowed: benchfmt, csv, json, markdown, openmetrics, table)` + "\n"},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"report", "--db", db, "--campaign", "golden-pairs"}, c.args...)
		if code := Main(context.Background(), args, &out, &errOut); code != ExitInvalidInput || errOut.String() != c.want || out.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit %d, %q", c.args, code, errOut.String(), out.String(), ExitInvalidInput, c.want)
		}
	}
}
