package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/ctrbench/ctrbench/internal/artifact"
)

// newArtifactVerifyCmd is ctrbench artifact verify.
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
	v, err := artifact.Verify(ctx, f, renderArchived)
	if err != nil {
		return err
	}
	fmt.Fprint(w, v.Note)
	return verdict(w, path, v.Checks)
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
