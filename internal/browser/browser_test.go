package browser

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenSeesWhatThePageDid: a page with a figure of two series, an error
// on the console and a request for an outside address; Open reports all
// three. The request goes to a closed loopback port (the discard port):
// nothing leaves the machine.
func TestOpenSeesWhatThePageDid(t *testing.T) {
	if _, err := Path(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "p.html")
	html := `<!DOCTYPE html><html><body>
<figure class="fig" id="f1" data-kind="lines"><svg viewBox="0 0 100 100" width="200" height="200">
<g class="series"><circle class="pt" cx="10" cy="10" r="3"/><circle class="pt" cx="20" cy="20" r="3"/></g>
<g class="series"><circle class="pt" cx="30" cy="30" r="3"/><circle class="pt" cx="300" cy="30" r="3"/></g>
</svg></figure>
<img src="http://127.0.0.1:9/x.png">
<script>console.error("boom")</script></body></html>`
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Open(context.Background(), page, []int{800, 390})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Figures) != 1 || rep.Figures[0].Series != 2 || rep.Figures[0].Points != 3 || rep.Figures[0].Outside != 1 {
		t.Errorf("figures %+v: want one with 2 series, 3 points drawn and 1 outside", rep.Figures)
	}
	if !strings.Contains(strings.Join(rep.Console, "\n"), "boom") {
		t.Errorf("console %q: want the error", rep.Console)
	}
	outside := false
	for _, u := range rep.Requests {
		outside = outside || strings.HasPrefix(u, "http://127.0.0.1:9/")
	}
	if !outside {
		t.Errorf("requests %q: want the image's", rep.Requests)
	}
	if len(rep.Views) != 2 || rep.Views[1].Width != 390 || len(rep.Views[1].Screenshot) < 100 || string(rep.Views[1].Screenshot[1:4]) != "PNG" {
		t.Errorf("views: want two PNG screenshots")
	}
}
