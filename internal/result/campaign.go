package result

import (
	"sort"
	"strings"
	"time"
)

// Campaign is one run of an experiment file.
type Campaign struct {
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	SpecPath string            `json:"spec_path"`
	SpecText string            `json:"spec_text"` // the file as read, after --set
	Seed     int64             `json:"seed"`
	Started  time.Time         `json:"started"`
	Ended    time.Time         `json:"ended,omitempty"`
	Status   string            `json:"status"` // running, done, interrupted, failed
	Env      map[string]string `json:"env"`    // environment fingerprint
	Baseline map[string]string `json:"baseline,omitempty"`
	// Kind is "" for an experiment's campaign, KindCalibration for the
	// A/A runs of `ctrbench calibrate`.
	Kind string `json:"kind,omitempty"`
	// Owner identifies the ctrbench process running the campaign ("pid
	// start-time"), so a campaign whose owner died reads as interrupted.
	Owner string `json:"owner,omitempty"`
	// Adaptive is the rule the campaign repeated its cells by; nil for a
	// fixed number of repetitions.
	Adaptive *Adaptive `json:"adaptive,omitempty"`
}

// Adaptive is an adaptive repetition rule (Stein's two-stage procedure):
// each cell gets at least Min and at most Max recorded trials, stopping
// once the 95% interval of the deciding metric is within RCI of its mean.
type Adaptive struct {
	Min int     `json:"min"`
	Max int     `json:"max"`
	RCI float64 `json:"rci"` // a fraction: 0.02 for "2%"
	// Metric decides for each cell: "" for each workload's headline (its
	// first declared metric).
	Metric string `json:"metric,omitempty"`
}

// A campaign's Status.
const (
	CampaignRunning     = "running"
	CampaignDone        = "done"
	CampaignInterrupted = "interrupted" // Ctrl-C, or its ctrbench was killed
	CampaignFailed      = "failed"      // the campaign could not go on (not a trial's failure)
)

// KindCalibration marks a calibration campaign.
const KindCalibration = "calibration"

// Cell is one combination of factor levels for one workload.
type Cell struct {
	ID           int               `json:"id"`            // 1-based, stable within a campaign
	Workload     string            `json:"workload"`      // the workload's name in the file
	WorkloadType string            `json:"workload_type"` // e.g. net.tcp_stream
	Factors      map[string]string `json:"factors"`       // factor -> level
	Params       map[string]string `json:"params"`        // resolved parameters
}

// Key is a stable text form of the cell: workload and sorted factor=level pairs.
func (c Cell) Key() string {
	return c.Workload + " " + FactorString(c.Factors)
}

// FactorString renders factor levels as "a=x b=y", sorted by factor.
func FactorString(f map[string]string) string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + f[k]
	}
	return strings.Join(parts, " ")
}

// Trial is one execution of a cell.
type Trial struct {
	ID           int64         `json:"id"`
	CampaignID   string        `json:"campaign_id"`
	CellID       int           `json:"cell_id"`
	Seq          int           `json:"seq"`        // position in the run order, 1-based
	Repetition   int           `json:"repetition"` // 1-based within the cell; warm-ups count separately
	Warmup       bool          `json:"warmup"`
	Status       Status        `json:"status"`
	Error        string        `json:"error,omitempty"`
	Raw          string        `json:"raw,omitempty"`
	Started      time.Time     `json:"started"`
	Ended        time.Time     `json:"ended"`
	Observations []Observation `json:"observations,omitempty"`
	// Flags say why an ok trial's conditions were not as planned ("" when
	// they were), e.g. neighbours that covered too little of its window.
	Flags string `json:"flags,omitempty"`
	// Seen is what the agents observed of their environment (interfaces,
	// limits, filesystem); a server's keys are prefixed with its role.
	Seen map[string]string `json:"seen,omitempty"`
	// FailedBy says what failed a trial that is not ok: FailedByWorkload
	// or FailedByPlatform ("" for an ok trial).
	FailedBy string `json:"failed_by,omitempty"`
	// Attempts are the earlier attempts at this trial that the platform
	// failed (retried); the trial's own fields are the last attempt's.
	Attempts []Attempt `json:"attempts,omitempty"`
	// Histograms are the distributions its agents recorded.
	Histograms []Histogram `json:"histograms,omitempty"`
}

// What failed a trial.
const (
	FailedByWorkload = "workload" // the workload, its tool or its validation
	FailedByPlatform = "platform" // the platform: its engine did not answer, could not start or wire an instance
)

// Attempt is an earlier try at a trial.
type Attempt struct {
	Started  time.Time `json:"started"`
	Ended    time.Time `json:"ended"`
	Status   Status    `json:"status"`
	Error    string    `json:"error"`
	FailedBy string    `json:"failed_by"`
}
