package htmlreport_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/browser"
	"github.com/ctrbench/ctrbench/internal/htmlreport"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/store"
)

// payloads would run script or fetch a resource if any reached the page
// as markup: in element text, in attributes (quoted or not), in SVG text,
// in a URL, closing the style or script element first.
var payloads = []string{
	`<script>window.__pwned="script"</script>`,
	`<img src=x onerror="window.__pwned='img'">`,
	`"><svg onload="window.__pwned='attr'">`,
	`' onmouseover='window.__pwned=1' x='`,
	`javascript:window.__pwned='url'`,
	`</style><script>window.__pwned="style"</script>`,
	`</script><script>window.__pwned="close"</script>`,
	`<link rel=stylesheet href="http://127.0.0.1:9/leak.css">`,
	`<img src="http://127.0.0.1:9/leak.png">`,
	`]]><foreignObject><script>window.__pwned="svg"</script></foreignObject>`,
	"{{.JS}} \u2028\u2029 \x00 \xff\xfe",
}

// Every string a campaign's user controls — its name, the experiment
// file, workload names, parameter values, factor levels, metric names and
// units (an exec workload's own; a metric name has no dots), failure reasons, a server's log kept as
// raw output, what an agent saw, the environment fingerprint — reaches
// the HTML report as text: opened in Chromium, no payload ran, nothing
// was requested but the file, the policy reported no violation (none was
// attempted), the payloads read as text on the page, and the report's
// own script, allowed by its hash, still runs.
func TestHostileStringsStayText(t *testing.T) {
	if _, err := browser.Path(); err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, filepath.Join(dir, "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all := strings.Join(payloads, " ")
	id := "hostile-1"
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	if err := db.CreateCampaign(ctx, result.Campaign{ID: id, Name: "name " + payloads[0], Status: "done", SpecText: "name: x\n# " + all + "\n",
		Seed: 1, Started: start, Ended: start.Add(time.Minute), Env: map[string]string{"host " + payloads[1]: payloads[2]}}); err != nil {
		t.Fatal(err)
	}
	cells := []result.Cell{}
	for i, p := range payloads {
		cells = append(cells, result.Cell{ID: i + 1, Workload: "w" + p, WorkloadType: "exec",
			Factors: map[string]string{"platform": p, "network": payloads[(i+1)%len(payloads)]}, Params: map[string]string{"command": p}})
	}
	if err := db.AddCells(ctx, id, cells); err != nil {
		t.Fatal(err)
	}
	seq := 0
	for i, p := range payloads {
		for rep := 1; rep <= 3; rep++ {
			seq++
			tr := result.Trial{CampaignID: id, CellID: i + 1, Seq: seq, Repetition: rep, Status: result.OK,
				Started: start.Add(time.Duration(seq) * time.Second), Ended: start.Add(time.Duration(seq)*time.Second + 500*time.Millisecond),
				Raw: p, Seen: map[string]string{"interfaces " + p: p},
				Observations: []result.Observation{{Metric: "ops " + strings.ReplaceAll(p, ".", "_"), Value: float64(10 + rep + i), Unit: "op/s " + p, Better: result.Higher}}}
			if rep == 3 {
				tr.Status, tr.Error, tr.FailedBy, tr.Observations = result.Failed, "the server said: "+p, result.FailedByWorkload, nil
			}
			if _, err := db.RecordTrial(ctx, tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	page := filepath.Join(dir, "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := htmlreport.Write(ctx, f, db, htmlreport.Options{Campaign: id}); err != nil {
		t.Fatal(err)
	}
	f.Close()

	// What a reader's visit would trip: hovering and clicking everything,
	// then the page's state.
	const poke = `(function () {
  document.querySelectorAll("*").forEach(function (e) {
    ["mouseover", "click", "focus"].forEach(function (t) { try { e.dispatchEvent(new Event(t)); } catch (x) {} });
  });
  return String(window.__pwned || "nothing ran");
})()`
	const sorted = `(function () { var th = document.querySelector("#trial-table th"); th.click(); return th.getAttribute("aria-sort") || "the report's script did not run"; })()`
	text := `document.body.innerText`
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	rep, err := browser.Open(ctx, page, []int{1024}, sorted, poke, text)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Results[0] != "ascending" {
		t.Errorf("sorting the trials: %q (the policy blocked the report's own script?)", rep.Results[0])
	}
	if rep.Results[1] != "nothing ran" {
		t.Errorf("a payload ran: %q", rep.Results[1])
	}
	for _, u := range rep.Requests {
		if !strings.HasPrefix(u, "file://") || !strings.HasSuffix(u, "/report.html") {
			t.Errorf("the page requested %q", u)
		}
	}
	if len(rep.Console) > 0 {
		t.Errorf("console (a policy violation means markup got through): %q", rep.Console)
	}
	for _, p := range []string{payloads[0], payloads[1], payloads[8]} {
		if !strings.Contains(rep.Results[2], p) {
			t.Errorf("%q is not on the page as text", p)
		}
	}
}
