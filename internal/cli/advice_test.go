package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const storedColoc = "golden-coloc-20261122-224331-8012"

// advise on the stored co-location campaign, in every form, with and
// without services to pack.
func TestAdviseGolden(t *testing.T) {
	db := storedCopy(t)
	for name, args := range map[string][]string{
		"text":     {},
		"json":     {"--format", "json", "--services", "a=cpu,b=net"},
		"markdown": {"--format", "markdown", "--max-slowdown", "0.6", "--container-case", "cpus=1", "--host-case", "cpus=none", "--services", "a=cpu,b=cpu,c=net"},
	} {
		t.Run(name, func(t *testing.T) {
			golden(t, "stored/advise-"+name+".golden", runMain(t, append([]string{"advise", "--db", db, "--campaign", storedColoc}, args...)...))
		})
	}
}

// Bad tolerances, services and cases are usage errors that say what is
// allowed; a campaign without neighbours is an error that says so.
func TestAdviseBadInput(t *testing.T) {
	db := storedCopy(t)
	file := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(file, []byte("services:\n  api: [N]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--max-slowdown", "0"}, 2, "want a percent above 0 (10%) or a fraction between 0 and 1"},
		{[]string{"--max-slowdown", "150%"}, 2, "want a percent above 0"},
		{[]string{"--max-slowdown", "ten"}, 2, "want a percent above 0"},
		{[]string{"--services", "api"}, 2, `"api" is not name=kind`},
		{[]string{"--services", "api=Z"}, 2, `kind "Z", which the campaign did not measure beside neighbours (kinds: cpu, net)`},
		{[]string{"--services-file", file}, 2, "s.yaml:2: service api: want its kind"},
		{[]string{"--host-case", "packaging"}, 2, "matches 2 of the cases"},
		{[]string{"--format", "xml"}, 2, "allowed: json, markdown, text"},
	} {
		var out, errb bytes.Buffer
		code := Main(t.Context(), append([]string{"advise", "--db", db, "--campaign", storedColoc}, c.args...), &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want exit %d and %q", c.args, code, errb.String(), c.code, c.want)
		}
	}
	var out, errb bytes.Buffer
	if code := Main(t.Context(), []string{"advise", "--db", db, "--campaign", "golden-pairs"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "no co-location cells") {
		t.Errorf("a campaign without neighbours: exit %d, %q", code, errb.String())
	}
}
