package artifact

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/ctrbench/ctrbench/internal/sysinfo"
)

// Build is ctrbench.json: which ctrbench made the artifact, when, and
// of which campaign.
type Build struct {
	Version   string         `json:"version"`
	Revision  string         `json:"vcs_revision"`
	Modified  *bool          `json:"vcs_modified"`
	VCSTime   string         `json:"vcs_time"`
	GoVersion string         `json:"go_version"`
	OS        string         `json:"os"`
	Arch      string         `json:"arch"`
	Made      string         `json:"made,omitempty"`
	Campaign  *CampaignFacts `json:"campaign,omitempty"`
	Format    int            `json:"artifact_format,omitempty"` // Format
}

// CampaignFacts is the campaign an artifact holds, in ctrbench.json.
type CampaignFacts struct {
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
func thisBuild() Build {
	b := Build{Version: sysinfo.Version, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
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
func sameBuild(a, b Build) bool {
	dirty := func(m *bool) string { return fmt.Sprint(m != nil && *m) }
	return a.Version == b.Version && a.Revision == b.Revision && dirty(a.Modified) == dirty(b.Modified) && a.GoVersion == b.GoVersion
}

// describe is a build in a few words: "ctrbench v1 (commit abc123, modified, go1.26)".
func (b Build) describe() string {
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

// indentJSON is v as indented JSON ending in a newline, as the archive's
// JSON files are written.
func indentJSON(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return append(b, '\n'), err
}
