package kubernetes_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/ctrbench/ctrbench/internal/invocation"
	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/platform/platformtest"
	"github.com/ctrbench/ctrbench/internal/result"
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
	p, campaign, labels := prepared(t, "test-k8s-front", 2)
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
			if res := platformtest.ReadResult(t, cli, key); res == nil || res.Status != result.OK {
				t.Fatalf("client through %s: %+v", network, res)
			}
			if res := platformtest.ReadResult(t, srv, key); res == nil || res.Status != result.OK {
				t.Fatalf("server behind %s: %+v", network, res)
			}
		})
	}
}
