package owner

import (
	"os"
	"strconv"
	"testing"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/testutil"
)

func TestLabels(t *testing.T) {
	got := Labels("c1", map[string]string{
		"app":                  "web",
		platform.LabelCampaign: "forged",
		platform.LabelManaged:  "false",
		platform.LabelOwnerPID: "1",
	}, map[string]string{platform.LabelRole: "server", "app": "web2"})
	want := map[string]string{
		"app":                  "web2", // later maps win over earlier
		platform.LabelRole:     "server",
		platform.LabelCampaign: "c1", // ctrbench's win over the caller's
		platform.LabelManaged:  "true",
		platform.LabelOwnerPID: strconv.Itoa(os.Getpid()),
	}
	if len(got) != len(want) {
		t.Errorf("Labels = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Labels[%s] = %q, want %q", k, got[k], v)
		}
	}
}

func TestRunning(t *testing.T) {
	cases := map[string]bool{
		"":                                false,
		"abc":                             false,
		"-1":                              false,
		strconv.Itoa(os.Getpid()):         false, // owner.test: not ctrbench by the rule
		strconv.Itoa(testutil.DeadPID(t)): false,
		strconv.Itoa(testutil.LivePID(t, "sleep")):             false,
		strconv.Itoa(testutil.LivePID(t, "/usr/bin/ctrbench")): true,
	}
	for pid, want := range cases {
		if got := Running(map[string]string{platform.LabelOwnerPID: pid}); got != want {
			t.Errorf("Running(%q) = %v, want %v", pid, got, want)
		}
	}
}
