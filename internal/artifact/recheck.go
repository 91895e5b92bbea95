package artifact

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Verification is what checking an archive found: the note that compares
// the ctrbench that made it with this one ("" when the archive could not
// be unpacked), and every check, in order.
type Verification struct {
	Note   string
	Checks []Check
}

// Verify unpacks the archive r reads into a temporary directory and checks
// it: every file against SHA256SUMS, and the report rendered again by
// render from the archived database against the archived one, byte for
// byte. An archive that cannot be unpacked is one failed check; the error
// is for what keeps the check from running at all.
func Verify(ctx context.Context, r io.Reader, render Render) (Verification, error) {
	tmp, err := os.MkdirTemp("", "ctrbench-verify-*")
	if err != nil {
		return Verification{}, err
	}
	defer os.RemoveAll(tmp)
	if err := os.Mkdir(filepath.Join(tmp, "archive"), 0o755); err != nil {
		return Verification{}, err
	}
	x, err := Extract(r, filepath.Join(tmp, "archive"))
	if err != nil {
		return Verification{Checks: []Check{{What: "archive", Detail: err.Error()}}}, nil
	}
	v := Verification{Note: buildNote(x)}
	v.Checks = append(v.Checks, Check{What: "archive", OK: true, Detail: fmt.Sprintf("%d files in %s/", len(x.Files), x.Top)})
	v.Checks = append(v.Checks, x.CheckSums()...)
	v.Checks = append(v.Checks, rerender(ctx, x, filepath.Join(tmp, "rerendered"), render))
	return v, nil
}

// buildNote is the line that compares the ctrbench that made the archive
// with this one: not a check, since another build may render differently
// for good reasons, but a reader must know.
func buildNote(x Extracted) string {
	var made Build
	raw, err := os.ReadFile(x.Path(BuildName))
	if err == nil {
		err = json.Unmarshal(raw, &made)
	}
	this := thisBuild()
	switch {
	case err != nil:
		return fmt.Sprintf("note    version: %s unreadable (%v); verified by %s\n", BuildName, err, this.describe())
	case sameBuild(made, this):
		return fmt.Sprintf("note    version: made and verified by %s\n", this.describe())
	}
	return fmt.Sprintf("note    version: made by %s, verified by %s: a report rendered by another build may differ for good reasons\n",
		made.describe(), this.describe())
}

// rerender renders the report again from the archived results.db into dir
// and compares it with the archived report.html.
func rerender(ctx context.Context, x Extracted, dir string, render Render) Check {
	c := Check{What: "report " + ReportName}
	for _, n := range []string{DBName, ReportName} {
		if !slices.Contains(x.Files, n) {
			c.Detail = "cannot render the report again: " + n + " is missing from the archive"
			return c
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.Detail = err.Error()
		return c
	}
	out := filepath.Join(dir, ReportName)
	if err := render(ctx, x.Path(DBName), x.Top, out); err != nil {
		c.Detail = "rendering it again from " + DBName + ": " + err.Error()
		return c
	}
	got, err := os.ReadFile(out)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	want, err := os.ReadFile(x.Path(ReportName))
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	if !bytes.Equal(got, want) {
		c.Detail = "differs from the report rendered again from " + DBName + ": " + reportDiff(want, got)
		return c
	}
	c.OK, c.Detail = true, fmt.Sprintf("rendered again from %s: identical (%d bytes)", DBName, len(got))
	return c
}

// reportDiff says where two texts first differ: the line, and each
// text's bytes around the first that differs.
func reportDiff(archived, again []byte) string {
	a, b := strings.Split(string(archived), "\n"), strings.Split(string(again), "\n")
	for i := 0; i < max(len(a), len(b)); i++ {
		if i >= len(a) || i >= len(b) {
			return fmt.Sprintf("line %d is missing from one: the archived report has %d lines, the one rendered again %d", i+1, len(a), len(b))
		}
		if a[i] == b[i] {
			continue
		}
		at := 0
		for at < len(a[i]) && at < len(b[i]) && a[i][at] == b[i][at] {
			at++
		}
		return fmt.Sprintf("line %d, from byte %d: archived %s, rendered again %s", i+1, at+1, around(a[i], at), around(b[i], at))
	}
	return fmt.Sprintf("%d bytes in the archive, %d rendered again", len(archived), len(again))
}

// around quotes s from a little before byte at, cut to a readable length.
func around(s string, at int) string {
	start, end, pre, post := max(0, at-30), min(len(s), at+70), "", ""
	for start > 0 && !utf8.RuneStart(s[start]) {
		start--
	}
	for end < len(s) && !utf8.RuneStart(s[end]) {
		end++
	}
	if start > 0 {
		pre = "…"
	}
	if end < len(s) {
		post = "…"
	}
	return pre + strconv.Quote(s[start:end]) + post
}
