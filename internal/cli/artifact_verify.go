package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/ctrbench/ctrbench/internal/artifact"
)

func newArtifactVerifyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "verify FILE",
		Short: "Check an artifact: its SHA256SUMS, and its report rendered again from its database, byte for byte",
		Long: "verify unpacks FILE (made by ctrbench artifact) into a temporary directory, checks every file listed\n" +
			"in its SHA256SUMS (there, and its sum matches) and that no file is there unlisted, then renders the\n" +
			"campaign's HTML report again from the archived results.db with this ctrbench and compares it with the\n" +
			"archived report.html byte for byte. It reads no other database, so it works from any directory, on\n" +
			"any machine. It prints one line per check and exits 0 when all pass, 1 when one fails. A ctrbench of\n" +
			"another version or commit than the one that made the archive is said: its report may differ.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{errors.New("artifact verify takes one archive file")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return verifyArtifact(cmd.Context(), args[0], cmd.OutOrStdout())
		},
	}
}

// verifyArtifact checks the archive at path, one line per check.
func verifyArtifact(ctx context.Context, path string, w io.Writer) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return usageError{fmt.Errorf("artifact %s: no such file", path)}
	}
	if err != nil {
		return err
	}
	defer f.Close()
	tmp, err := os.MkdirTemp("", "ctrbench-verify-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Mkdir(filepath.Join(tmp, "archive"), 0o755); err != nil {
		return err
	}
	x, err := artifact.Extract(f, filepath.Join(tmp, "archive"))
	if err != nil {
		return verdict(w, path, []artifact.Check{{What: "archive", Detail: err.Error()}})
	}
	checks := []artifact.Check{{What: "archive", OK: true, Detail: fmt.Sprintf("%d files in %s/", len(x.Files), x.Top)}}
	checks = append(checks, x.CheckSums()...)
	fmt.Fprint(w, buildNote(x))
	checks = append(checks, rerender(ctx, x, filepath.Join(tmp, "rerendered")))
	return verdict(w, path, checks)
}

// verdict prints the checks and a summary; a failed check is exit 1.
func verdict(w io.Writer, path string, checks []artifact.Check) error {
	failed := 0
	for _, c := range checks {
		mark := "ok"
		if !c.OK {
			mark = "FAILED"
			failed++
		}
		line := fmt.Sprintf("%-7s %s", mark, c.What)
		if c.Detail != "" {
			line += ": " + c.Detail
		}
		fmt.Fprintln(w, line)
	}
	if failed > 0 {
		fmt.Fprintf(w, "%s: %d of %d checks FAILED\n", path, failed, len(checks))
		return withCode(ExitError, fmt.Errorf("artifact %s does not verify: %d of %d checks failed", path, failed, len(checks)))
	}
	fmt.Fprintf(w, "%s: all %d checks ok: the files are the ones summed and the report renders again identically\n", path, len(checks))
	return nil
}

// buildNote is the line that compares the ctrbench that made the archive
// with this one: not a check, since another build may render differently
// for good reasons, but a reader must know.
func buildNote(x artifact.Extracted) string {
	var made buildFacts
	raw, err := os.ReadFile(x.Path(artBuild))
	if err == nil {
		err = json.Unmarshal(raw, &made)
	}
	this := thisBuild()
	switch {
	case err != nil:
		return fmt.Sprintf("note    version: %s unreadable (%v); verified by %s\n", artBuild, err, this.describe())
	case sameBuild(made, this):
		return fmt.Sprintf("note    version: made and verified by %s\n", this.describe())
	}
	return fmt.Sprintf("note    version: made by %s, verified by %s: a report rendered by another build may differ for good reasons\n",
		made.describe(), this.describe())
}

// rerender renders the report again from the archived results.db into dir
// and compares it with the archived report.html.
func rerender(ctx context.Context, x artifact.Extracted, dir string) artifact.Check {
	c := artifact.Check{What: "report " + artReport}
	for _, n := range []string{artDB, artReport} {
		if !slices.Contains(x.Files, n) {
			c.Detail = "cannot render the report again: " + n + " is missing from the archive"
			return c
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.Detail = err.Error()
		return c
	}
	out := filepath.Join(dir, artReport)
	if err := renderArchived(ctx, x.Path(artDB), x.Top, out); err != nil {
		c.Detail = "rendering it again from " + artDB + ": " + err.Error()
		return c
	}
	got, err := os.ReadFile(out)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	want, err := os.ReadFile(x.Path(artReport))
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	if !bytes.Equal(got, want) {
		c.Detail = "differs from the report rendered again from " + artDB + ": " + reportDiff(want, got)
		return c
	}
	c.OK, c.Detail = true, fmt.Sprintf("rendered again from %s: identical (%d bytes)", artDB, len(got))
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
