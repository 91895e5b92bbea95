package artifact

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ctrbench/ctrbench/internal/analysis"
	"github.com/ctrbench/ctrbench/internal/campaign"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/store"
)

// The files of an artifact, beside SumsName.
const (
	ExperimentName = "experiment.yaml"
	DBName         = "results.db"
	ReportName     = "report.html"
	EnvName        = "environment.json"
	BuildName      = "ctrbench.json"
	CommandsName   = "commands.txt"
	ReadmeName     = "README.txt"
)

// Format is the layout of the archive, in ctrbench.json.
const Format = 1

// Render writes campaign id's HTML report from the results database at
// dbPath to htmlPath: what `ctrbench report --db dbPath --campaign id
// --html htmlPath` writes. The caller renders, so the archived report is
// byte for byte the one the report command writes.
type Render func(ctx context.Context, dbPath, id, htmlPath string) error

// Options say where a campaign is packed from and into what.
type Options struct {
	// DB is the results database holding the campaign; its rows are
	// copied into the archive's database.
	DB *store.DB
	// Reports is the same database as reports read it: the calibration
	// the campaign's report uses is the one analysis.Load picks there.
	Reports analysis.Source
	// Out is the archive to write; "" for CAMPAIGN-ID.ctrbench.tar.gz in
	// the current directory.
	Out string
	// Render renders the archived report from the archived database.
	Render Render
}

// Made is an artifact written: its campaign's ID, the campaign's status
// as a reader sees it, and the archive's path.
type Made struct {
	Campaign string
	Status   string
	Path     string
}

// UnknownCampaignError is a campaign ID (or prefix) that names no
// campaign of the database, or more than one: the caller's mistake.
type UnknownCampaignError struct{ Err error }

func (e *UnknownCampaignError) Error() string { return e.Err.Error() }
func (e *UnknownCampaignError) Unwrap() error { return e.Err }

// packed is what an artifact is made of, before it is archived.
type packed struct {
	Campaign    result.Campaign
	Status      string // as a reader sees it (campaign.Status)
	Calibration string // the calibration campaign its report uses, or ""
	Dir         string // the temporary directory holding results.db and report.html
	File        string // the archive's name, for its commands
}

// Make packs campaign id (an ID or unique prefix) of o.DB into one
// archive: its rows and its calibration's in a fresh database, the report
// rendered from that database, the facts and command lines beside them.
// A running campaign is refused.
func Make(ctx context.Context, id string, o Options) (Made, error) {
	p, err := choose(ctx, o, id)
	if err != nil {
		return Made{}, err
	}
	if p.Dir, err = os.MkdirTemp("", "ctrbench-artifact-*"); err != nil {
		return Made{}, err
	}
	defer os.RemoveAll(p.Dir)
	ids := []string{p.Campaign.ID}
	if p.Calibration != "" {
		ids = append(ids, p.Calibration)
	}
	if err := copyRows(ctx, o.DB, filepath.Join(p.Dir, DBName), ids); err != nil {
		return Made{}, err
	}
	if err := o.Render(ctx, filepath.Join(p.Dir, DBName), p.Campaign.ID, filepath.Join(p.Dir, ReportName)); err != nil {
		return Made{}, err
	}
	out := o.Out
	if out == "" {
		out = p.Campaign.ID + ".ctrbench.tar.gz"
	}
	p.File = filepath.Base(out)
	entries, err := contents(p, time.Now().UTC())
	if err != nil {
		return Made{}, err
	}
	if err := writeArchive(out, p, entries); err != nil {
		return Made{}, err
	}
	return Made{Campaign: p.Campaign.ID, Status: p.Status, Path: out}, nil
}

// choose finds the campaign to pack and the calibration its report uses
// (the one analysis.Load picks in this database), refusing one that runs.
func choose(ctx context.Context, o Options, id string) (packed, error) {
	c, err := o.DB.Campaign(ctx, id) // as stored: the copy is of the rows
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrAmbiguous) {
		return packed{}, &UnknownCampaignError{err}
	}
	if err != nil {
		return packed{}, err
	}
	p := packed{Campaign: c, Status: campaign.Status(c)}
	if p.Status == result.CampaignRunning {
		return packed{}, fmt.Errorf("campaign %s is still running: make its artifact once it is done, interrupted or failed", c.ID)
	}
	l, err := analysis.Load(ctx, o.Reports, analysis.Query{Campaign: c.ID})
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

// writeArchive writes the archive to path through a temporary file, so a
// failure leaves no half-written archive.
func writeArchive(path string, p packed, entries []Entry) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ctrbench-artifact-*.tar.gz")
	if err != nil {
		return fmt.Errorf("artifact: %w", err)
	}
	defer os.Remove(tmp.Name())
	mtime := p.Campaign.Ended
	if mtime.IsZero() {
		mtime = p.Campaign.Started
	}
	err = Write(tmp, p.Campaign.ID, mtime, entries)
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
