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

// artifactOptions are the flags of ctrbench artifact.
type artifactOptions struct {
	DB  string
	Out string
}

// newArtifactCmd is ctrbench artifact, with its verify subcommand.
func newArtifactCmd() *cobra.Command {
	o := artifactOptions{}
	c := &cobra.Command{
		Use:   "artifact CAMPAIGN",
		Short: "Pack a campaign into one archive a reviewer can check (ctrbench artifact verify FILE checks one)",
		Long: "artifact packs campaign CAMPAIGN (an ID or unique prefix) into one tar.gz: the experiment file as run,\n" +
			"a results database holding only this campaign (and the calibration its report uses), its HTML report\n" +
			"rendered from that database, the environment fingerprint, this ctrbench's version and commit, the\n" +
			"command lines, a README and SHA256SUMS of them all. `ctrbench artifact verify FILE` checks the sums\n" +
			"and renders the report again from the archived database, byte for byte, anywhere (no database needed).\n" +
			"A running campaign is refused; a done, interrupted or failed one is packed with its status said.",
		Example: "  ctrbench artifact quickstart-20261122-0215\n  ctrbench artifact verify quickstart-20261122-021501-1a2b.ctrbench.tar.gz",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{errors.New("artifact takes one campaign (ID or unique prefix), or: artifact verify FILE")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return makeArtifact(cmd.Context(), args[0], o, cmd.OutOrStdout())
		},
	}
	c.Flags().StringVar(&o.DB, "db", DefaultDB, "results database (SQLite) holding the campaign")
	c.Flags().StringVarP(&o.Out, "output", "o", "", "the archive to write (default: CAMPAIGN-ID.ctrbench.tar.gz in the current directory)")
	c.AddCommand(newArtifactVerifyCmd())
	return c
}

// makeArtifact opens the results database, has artifact.Make pack the
// campaign, and says where the archive is.
func makeArtifact(ctx context.Context, id string, o artifactOptions, w io.Writer) error {
	if _, err := os.Stat(o.DB); err != nil {
		return fmt.Errorf("results database: %w", err)
	}
	db, err := openResults(ctx, o.DB)
	if err != nil {
		return err
	}
	defer db.Close()
	made, err := artifact.Make(ctx, id, artifact.Options{DB: db.DB, Reports: db, Out: o.Out, Render: renderArchived})
	var unknown *artifact.UnknownCampaignError
	if errors.As(err, &unknown) {
		return usageError{unknown.Err}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "artifact of campaign %s (%s) written to %s\ncheck it with: ctrbench artifact verify %s\n", made.Campaign, made.Status, made.Path, made.Path)
	return nil
}

// renderArchived writes campaign id's HTML report from the database at
// dbPath to htmlPath: what `ctrbench report --db dbPath --campaign id
// --html htmlPath` writes (artifact.Render).
func renderArchived(ctx context.Context, dbPath, id, htmlPath string) error {
	db, err := openResults(ctx, dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	return writeHTML(ctx, db, reportOptions{DB: dbPath, Campaign: id, HTML: htmlPath}, io.Discard)
}
