package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/artifact"
	"github.com/ctrbench/ctrbench/internal/campaign"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/store"
	"github.com/ctrbench/ctrbench/internal/sysinfo"
)

// The files of an artifact, beside artifact.SumsName.
const (
	artExperiment = "experiment.yaml"
	artDB         = "results.db"
	artReport     = "report.html"
	artEnv        = "environment.json"
	artBuild      = "ctrbench.json"
	artCommands   = "commands.txt"
	artReadme     = "README.txt"
)

// artifactFormat is the layout of the archive, in ctrbench.json.
const artifactFormat = 1

type artifactOptions struct {
	DB  string
	Out string
}

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

// packed is what an artifact is made of, before it is archived.
type packed struct {
	Campaign    result.Campaign
	Status      string // as a reader sees it (campaign.Status)
	Calibration string // the calibration campaign its report uses, or ""
	Dir         string // the temporary directory holding results.db and report.html
	File        string // the archive's name, for its commands
}

func makeArtifact(ctx context.Context, id string, o artifactOptions, w io.Writer) error {
	if _, err := os.Stat(o.DB); err != nil {
		return fmt.Errorf("results database: %w", err)
	}
	db, err := openResults(ctx, o.DB)
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := choose(ctx, db, id)
	if err != nil {
		return err
	}
	if p.Dir, err = os.MkdirTemp("", "ctrbench-artifact-*"); err != nil {
		return err
	}
	defer os.RemoveAll(p.Dir)
	ids := []string{p.Campaign.ID}
	if p.Calibration != "" {
		ids = append(ids, p.Calibration)
	}
	if err := copyRows(ctx, db.DB, filepath.Join(p.Dir, artDB), ids); err != nil {
		return err
	}
	if err := renderArchived(ctx, filepath.Join(p.Dir, artDB), p.Campaign.ID, filepath.Join(p.Dir, artReport)); err != nil {
		return err
	}
	out := o.Out
	if out == "" {
		out = p.Campaign.ID + ".ctrbench.tar.gz"
	}
	p.File = filepath.Base(out)
	entries, err := artifactFiles(p, time.Now().UTC())
	if err != nil {
		return err
	}
	if err := writeArchive(out, p, entries); err != nil {
		return err
	}
	fmt.Fprintf(w, "artifact of campaign %s (%s) written to %s\ncheck it with: ctrbench artifact verify %s\n", p.Campaign.ID, p.Status, out, out)
	return nil
}

// choose finds the campaign to pack and the calibration its report uses
// (the one analysis.Load picks in this database), refusing one that runs.
func choose(ctx context.Context, db results, id string) (packed, error) {
	c, err := db.DB.Campaign(ctx, id) // as stored: the copy is of the rows
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrAmbiguous) {
		return packed{}, usageError{err}
	}
	if err != nil {
		return packed{}, err
	}
	p := packed{Campaign: c, Status: campaign.Status(c)}
	if p.Status == result.CampaignRunning {
		return packed{}, fmt.Errorf("campaign %s is still running: make its artifact once it is done, interrupted or failed", c.ID)
	}
	l, err := analysis.Load(ctx, db, analysis.Query{Campaign: c.ID})
	if err != nil {
		return packed{}, err
	}
	if l.Calibration != nil {
		p.Calibration = l.Calibration.Campaign.ID
	}
	return p, nil
}

// copyRows writes a fresh database at path holding only campaigns ids.
func copyRows(ctx context.Context, src *store.DB, path string, ids []string) error {
	dst, err := store.Open(ctx, path)
	if err != nil {
		return err
	}
	if err := src.CopyCampaigns(ctx, dst, ids...); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Close(); err != nil {
		return err
	}
	// Closed, the database is the one file: its write-ahead log is gone.
	if _, err := os.Stat(path + "-wal"); err == nil {
		return fmt.Errorf("the artifact's database %s kept a write-ahead log after closing", path)
	}
	return nil
}

// renderArchived writes campaign id's HTML report from the database at
// dbPath to htmlPath: what `ctrbench report --db dbPath --campaign id
// --html htmlPath` writes.
func renderArchived(ctx context.Context, dbPath, id, htmlPath string) error {
	db, err := openResults(ctx, dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	return writeHTML(ctx, db, reportOptions{DB: dbPath, Campaign: id, HTML: htmlPath}, io.Discard)
}

// writeArchive writes the archive to path through a temporary file, so a
// failure leaves no half-written archive.
func writeArchive(path string, p packed, entries []artifact.Entry) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ctrbench-artifact-*.tar.gz")
	if err != nil {
		return fmt.Errorf("artifact: %w", err)
	}
	defer os.Remove(tmp.Name())
	mtime := p.Campaign.Ended
	if mtime.IsZero() {
		mtime = p.Campaign.Started
	}
	err = artifact.Write(tmp, p.Campaign.ID, mtime, entries)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("artifact %s: %w", path, err)
	}
	return nil
}

// buildFacts is ctrbench.json: which ctrbench made the artifact, when, and
// of which campaign.
type buildFacts struct {
	Version   string         `json:"version"`
	Revision  string         `json:"vcs_revision"`
	Modified  *bool          `json:"vcs_modified"`
	VCSTime   string         `json:"vcs_time"`
	GoVersion string         `json:"go_version"`
	OS        string         `json:"os"`
	Arch      string         `json:"arch"`
	Made      string         `json:"made,omitempty"`
	Campaign  *campaignFacts `json:"campaign,omitempty"`
	Format    int            `json:"artifact_format,omitempty"` // artifactFormat
}

type campaignFacts struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Kind         string `json:"kind,omitempty"`
	Status       string `json:"status"`                  // as a reader sees it
	StoredStatus string `json:"stored_status,omitempty"` // when the row says otherwise (running, its ctrbench gone)
	Started      string `json:"started"`
	Ended        string `json:"ended,omitempty"`
	Calibration  string `json:"calibration,omitempty"`
}

// thisBuild is the running ctrbench's facts: its version, and the commit,
// dirty flag and Go that the Go toolchain stamped into the binary.
func thisBuild() buildFacts {
	b := buildFacts{Version: sysinfo.Version, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			m := s.Value == "true"
			b.Modified = &m
		case "vcs.time":
			b.VCSTime = s.Value
		}
	}
	return b
}

// sameBuild says whether two builds would render alike by construction:
// the same version, commit, dirty flag and Go.
func sameBuild(a, b buildFacts) bool {
	dirty := func(m *bool) string { return fmt.Sprint(m != nil && *m) }
	return a.Version == b.Version && a.Revision == b.Revision && dirty(a.Modified) == dirty(b.Modified) && a.GoVersion == b.GoVersion
}

// describe is a build in a few words: "ctrbench v1 (commit abc123, modified, go1.26)".
func (b buildFacts) describe() string {
	s := "ctrbench " + b.Version + " ("
	if b.Revision != "" {
		s += "commit " + b.Revision
		if b.Modified != nil && *b.Modified {
			s += ", modified"
		}
		s += ", "
	} else {
		s += "no commit recorded, "
	}
	return s + b.GoVersion + ")"
}

func indentJSON(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return append(b, '\n'), err
}
