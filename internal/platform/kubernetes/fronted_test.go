package kubernetes_test

import (
	"bufio"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/kubernetes"
	"github.com/ctrbench/ctrbench/internal/platform/platformtest"
	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/testutil"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// fronted is the port a fronted server listens on (the runner gives it
// plan.PublishedPort).
const fronted = 15201

// TestFronted: a server on network service is reached through its
// Service's ClusterIP, and on nodeport at its node's address and the
// Service's NodePort, by a client pod on the other node that first waits
// until the Service carries a connection to the server's probe port (the
// workload's own connection is its one: the server would take a probe
// for its client); the server's address and Service are recorded.
func TestFronted(t *testing.T) {
	testCluster(t)
	ctx := context.Background()
	campaign, labels := platformtest.NewCampaign("test-k8s-front")
	p, err := kubernetes.Open(ctx, platform.Config{Binary: testutil.Binary(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	if err := p.Prepare(ctx, platform.Setup{CampaignID: campaign, Labels: labels, Hosts: 2}); err != nil {
		t.Fatal(err)
	}
	key := result.NewKey()
	for i, network := range []vocab.Network{vocab.Service, vocab.NodePort} {
		t.Run(string(network), func(t *testing.T) {
			params := `{"duration":"300ms"}`
			srvInv := invocation.Agent{Kind: invocation.Run, Workload: "net.tcp_rr", Params: params, Role: "server", Bind: "0.0.0.0", Port: fronted, Key: key}
			srv, err := p.Start(ctx, platform.InstanceSpec{Name: campaign + "-s" + strconv.Itoa(i), Agent: srvInv, Network: network, Host: 1, Labels: labels})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Remove(ctx)
			pub, ok := srv.(platform.Publisher)
			if !ok || pub.Published() == "" {
				t.Fatalf("a server on network %s gives no address it is fronted at", network)
			}
			seen := srv.(platform.Seer).Seen()
			if seen["kubernetes.service_address"] != pub.Published() {
				t.Errorf("recorded %v; want the Service's address %s", seen, pub.Published())
			}
			probe := srv.(platform.Fronted).Probe()
			if probe == "" || probe == pub.Published() {
				t.Fatalf("probe address %q, want one beside %s", probe, pub.Published())
			}
			t.Logf("%s: server pod %s at %s, reached at %s", network, seen["kubernetes.pod"], srv.IP(), pub.Published())
			if pub.Published() == srv.IP()+":"+strconv.Itoa(fronted) {
				t.Errorf("fronted at the pod's own address %s", pub.Published())
			}
			cliInv := invocation.Agent{Kind: invocation.Run, Workload: "net.tcp_rr", Params: params, Role: "client", Target: pub.Published(), WaitConnect: probe, Key: key}
			cli, err := p.Start(ctx, platform.InstanceSpec{Name: campaign + "-c" + strconv.Itoa(i), Agent: cliInv, Network: network, Host: 2, Labels: labels})
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Remove(ctx)
			if res := resultOf(t, cli, key); res == nil || res.Status != result.OK {
				t.Fatalf("client through %s: %+v", network, res)
			}
			if res := resultOf(t, srv, key); res == nil || res.Status != result.OK {
				t.Fatalf("server behind %s: %+v", network, res)
			}
		})
	}
}

// resultOf reads an instance's result event, within a minute.
func resultOf(t *testing.T, in platform.Instance, key string) *result.Result {
	t.Helper()
	done := make(chan *result.Result, 1)
	go func() {
		sc := bufio.NewScanner(in.Stdout())
		var res *result.Result
		for sc.Scan() {
			if ev, v := result.ReadEvent(sc.Bytes(), key); v == result.Valid && ev.Event == "result" {
				res = ev.Result
			}
		}
		done <- res
	}()
	select {
	case res := <-done:
		return res
	case <-time.After(time.Minute):
		t.Fatal("no result within a minute")
	}
	return nil
}
