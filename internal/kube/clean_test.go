package kube

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// deadPID is the pid of a child that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// livePID starts a sleeping child whose command line is argv0, as a
// stand-in for a running ctrbench (or, with another argv0, for an
// unrelated process that reuses a pid). The test binary itself (kube.test)
// is not ctrbench by the rule, and the rule is not bent for it.
func livePID(t *testing.T, argv0 string) int {
	t.Helper()
	cmd := exec.Command("sleep", "120")
	cmd.Args[0] = argv0
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Until the child has exec'd, its cmdline is still the test binary's.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline")
		if strings.HasPrefix(string(b), argv0+"\x00") {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cmd.Process.Pid
}

func TestOwnerRunning(t *testing.T) {
	cases := map[string]bool{
		"":                                false,
		"abc":                             false,
		"-1":                              false,
		strconv.Itoa(os.Getpid()):         false, // kube.test
		strconv.Itoa(deadPID(t)):          false,
		strconv.Itoa(livePID(t, "sleep")): false,
		strconv.Itoa(livePID(t, "/usr/bin/ctrbench")): true,
	}
	for pid, want := range cases {
		if got := ownerRunning(pid); got != want {
			t.Errorf("ownerRunning(%q) = %v, want %v", pid, got, want)
		}
	}
}

// Clean removes a campaign's namespace, with its pod, once its owner is
// dead, and keeps one whose owner is a running ctrbench.
func TestClean(t *testing.T) {
	t.Parallel()
	c := testClient(t)
	ctx := testContext(t)
	owned := func(pid int) (campaign, ns string) {
		campaign = testCampaign(t)
		labels := Labels(campaign)
		labels[platform.LabelOwnerPID] = strconv.Itoa(pid) // Labels names this process
		ns, err := c.ensureNamespace(ctx, campaign, labels)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.DeleteNamespace(context.Background(), ns) })
		return campaign, ns
	}
	deadCampaign, deadNS := owned(deadPID(t))
	liveCampaign, liveNS := owned(livePID(t, "/usr/bin/ctrbench"))
	p, err := c.StartPod(ctx, PodSpec{Name: "sleeper", Namespace: deadNS, Image: smokeImage, Args: []string{"sleep", "3600"}})
	if err != nil {
		t.Fatal(err)
	}

	removed, err := c.Clean(ctx, deadCampaign)
	if err != nil || !slices.Equal(removed, []string{deadNS}) {
		t.Errorf("Clean(%s) = %v, %v; want [%s]", deadCampaign, removed, err, deadNS)
	}
	if _, err := c.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metaGet); err == nil {
		t.Errorf("pod %s/%s still there after Clean", p.Namespace, p.Name)
	}
	removed, err = c.Clean(ctx, liveCampaign)
	if err != nil || len(removed) != 0 {
		t.Errorf("Clean(%s) = %v, %v; want nothing removed: its owner runs", liveCampaign, removed, err)
	}
	if _, err := c.cs.CoreV1().Namespaces().Get(ctx, liveNS, metaGet); err != nil {
		t.Errorf("namespace %s of a running owner: %v", liveNS, err)
	}
}
