package wireguard

import (
	"context"
	"crypto/ecdh"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/ctrbench/ctrbench/internal/testutil"
)

// RFC 7748, section 6.1: Alice's and Bob's X25519 key pairs.
var rfc7748 = []struct{ private, public string }{
	{"77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a", "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"},
	{"5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb", "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"},
}

func b64(t *testing.T, hexKey string) string {
	t.Helper()
	b, err := hex.DecodeString(hexKey)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

func TestPublicKeyRFC7748(t *testing.T) {
	for _, v := range rfc7748 {
		got, err := PublicKey(b64(t, v.private))
		if err != nil {
			t.Fatal(err)
		}
		if want := b64(t, v.public); got != want {
			t.Errorf("PublicKey(%s) = %s, want %s", v.private, got, want)
		}
	}
	// The same vector written as `wg genkey` / `wg pubkey` print keys.
	got, err := PublicKey("dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo=")
	if err != nil || got != "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo=" {
		t.Errorf("PublicKey(Alice) = %q, %v", got, err)
	}
}

func TestGenerateKey(t *testing.T) {
	sk1, pk1, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	sk2, pk2, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if sk1 == sk2 || pk1 == pk2 {
		t.Fatal("two generated keys are equal")
	}
	for _, sk := range []string{sk1, sk2} {
		if len(sk) != 44 || !strings.HasSuffix(sk, "=") {
			t.Errorf("private key %q is not 44 base64 characters", sk)
		}
		k, err := parseKey(sk)
		if err != nil {
			t.Fatal(err)
		}
		if k[0]&7 != 0 || k[31]&128 != 0 || k[31]&64 == 0 {
			t.Errorf("private key %q is not clamped", sk)
		}
	}
	if pk, err := PublicKey(sk1); err != nil || pk != pk1 {
		t.Errorf("PublicKey(generated) = %q, %v; GenerateKey said %q", pk, err, pk1)
	}
	// Both sides derive the same shared secret: the pairs are X25519 pairs.
	shared := func(sk, pk string) []byte {
		skb, _ := base64.StdEncoding.DecodeString(sk)
		pkb, _ := base64.StdEncoding.DecodeString(pk)
		priv, err := ecdh.X25519().NewPrivateKey(skb)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := ecdh.X25519().NewPublicKey(pkb)
		if err != nil {
			t.Fatal(err)
		}
		s, err := priv.ECDH(pub)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if a, b := shared(sk1, pk2), shared(sk2, pk1); string(a) != string(b) {
		t.Error("the two key pairs do not agree on a shared secret")
	}
}

func TestPublicKeyRejects(t *testing.T) {
	for in, want := range map[string]string{
		"":    "missing",
		"abc": "want 44 base64 characters",
		"dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LC*=": "not base64",
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=": "all zero",
		"dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo":  "want 44",
	} {
		_, err := PublicKey(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("PublicKey(%q) = %v, want an error with %q", in, err, want)
		}
	}
}

func validConfig(t *testing.T) Config {
	t.Helper()
	sk, _, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	_, peer, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Interface: "ctbwg0", MTU: 1420, Address: "198.18.250.1/24",
		PrivateKey: sk, ListenPort: 51820,
		Peers: []Peer{{PublicKey: peer, Endpoint: "10.250.0.2:51820", AllowedIPs: []string{"198.18.250.2/32"}}},
	}
}

func TestValidateAccepts(t *testing.T) {
	c := validConfig(t)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.MTU, c.ListenPort = 0, 0
	c.Peers[0].Endpoint = ""
	c.Peers = append(c.Peers, Peer{PublicKey: b64(t, rfc7748[1].public), Endpoint: "[fd00::2]:51820", AllowedIPs: []string{"fd00:1::/64", "198.18.251.0/24"}})
	if err := c.Validate(); err != nil {
		t.Fatalf("MTU 0, port 0, no endpoint, IPv6 endpoint: %v", err)
	}
}

func TestValidateRejects(t *testing.T) {
	otherKey := b64(t, rfc7748[1].public)
	for _, tc := range []struct {
		name   string
		change func(c *Config)
		want   string
	}{
		{"no interface", func(c *Config) { c.Interface = "" }, `interface "": missing`},
		{"foreign name", func(c *Config) { c.Interface = "wg0" }, `interface "wg0": must start with "ctb"`},
		{"long name", func(c *Config) { c.Interface = "ctb0123456789abc" }, "16 characters, at most 15"},
		{"slash in name", func(c *Config) { c.Interface = "ctb/x" }, `character '/' not allowed`},
		{"space in name", func(c *Config) { c.Interface = "ctb x" }, `character ' ' not allowed`},
		{"no address", func(c *Config) { c.Address = "" }, "address: missing"},
		{"address without prefix", func(c *Config) { c.Address = "198.18.250.1" }, `address "198.18.250.1": not a CIDR`},
		{"unspecified address", func(c *Config) { c.Address = "0.0.0.0/0" }, "not a unicast address"},
		{"small MTU", func(c *Config) { c.MTU = 100 }, "mtu 100: want 576 to 65535"},
		{"big MTU", func(c *Config) { c.MTU = 70000 }, "mtu 70000"},
		{"IPv6 small MTU", func(c *Config) { c.Address, c.MTU = "fd00::1/64", 1000 }, "IPv6 address needs at least 1280"},
		{"port", func(c *Config) { c.ListenPort = 70000 }, "listen port 70000"},
		{"no private key", func(c *Config) { c.PrivateKey = "" }, "private key: missing"},
		{"short private key", func(c *Config) { c.PrivateKey = "AAAA" }, "private key: want 44 base64 characters (32 bytes), got 4"},
		{"hex private key", func(c *Config) { c.PrivateKey = rfc7748[0].private }, "private key: want 44"},
		{"bad peer key", func(c *Config) { c.Peers[0].PublicKey = "not a key" }, "peer 0: public key: want 44"},
		{"own key as peer", func(c *Config) {
			c.PrivateKey = b64(t, rfc7748[0].private)
			c.Peers[0].PublicKey = b64(t, rfc7748[0].public)
		}, "peer 0: public key is this interface's own"},
		{"duplicate peer", func(c *Config) {
			c.Peers = append(c.Peers, Peer{PublicKey: c.Peers[0].PublicKey, AllowedIPs: []string{"10.9.0.0/16"}})
		}, "peer 1: public key is also peer 0's"},
		{"host name endpoint", func(c *Config) { c.Peers[0].Endpoint = "example.com:51820" }, `peer 0: endpoint "example.com:51820": want ip:port`},
		{"endpoint without port", func(c *Config) { c.Peers[0].Endpoint = "10.250.0.2" }, `endpoint "10.250.0.2": want ip:port`},
		{"endpoint port 0", func(c *Config) { c.Peers[0].Endpoint = "10.250.0.2:0" }, "port 0"},
		{"IPv6 endpoint without brackets", func(c *Config) { c.Peers[0].Endpoint = "fd00::2:51820" }, "want ip:port ([ip]:port for IPv6)"},
		{"bad allowed IP", func(c *Config) { c.Peers[0].AllowedIPs = []string{"10.1.2.300/32"} }, `peer 0: allowed IP "10.1.2.300/32": not a CIDR`},
		{"allowed IP twice", func(c *Config) { c.Peers[0].AllowedIPs = []string{"10.1.0.0/16", "10.1.2.3/16"} }, "peer 0: allowed IP 10.1.0.0/16 listed twice"},
		{"allowed IP on two peers", func(c *Config) {
			c.Peers = append(c.Peers, Peer{PublicKey: otherKey, AllowedIPs: c.Peers[0].AllowedIPs})
		}, "peer 1: allowed IP 198.18.250.2/32 is also peer 0's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig(t)
			tc.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error with %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "wireguard config: ") {
				t.Errorf("error %q does not say it is about the wireguard config", err)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := validConfig(t)
	c.Interface, c.PrivateKey, c.Peers[0].Endpoint = "eth0", "", "nowhere"
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate() accepted three problems")
	}
	for _, want := range []string{`interface "eth0"`, "private key: missing", `endpoint "nowhere"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %q, missing %q", err, want)
		}
	}
}

func TestRunRejectsBadConfigWithoutCreatingAnything(t *testing.T) {
	c := validConfig(t)
	c.Interface = "eth0"
	called := false
	err := Run(context.Background(), c, nil, func() { called = true })
	if err == nil || !strings.Contains(err.Error(), `interface "eth0"`) || called {
		t.Fatalf("Run(bad config) = %v, ready called: %v", err, called)
	}
}

func TestUAPI(t *testing.T) {
	c := Config{
		Interface: "ctbwg0", Address: "10.0.0.1/24", ListenPort: 51820,
		PrivateKey: b64(t, rfc7748[0].private),
		Peers: []Peer{
			{PublicKey: b64(t, rfc7748[1].public), Endpoint: "10.250.0.2:51820", AllowedIPs: []string{"10.251.0.2/32", "10.9.1.1/16"}},
			{PublicKey: b64(t, rfc7748[0].public), Endpoint: "[fd00::2]:51821"},
		},
	}
	got, err := c.uapi()
	if err != nil {
		t.Fatal(err)
	}
	want := "private_key=" + rfc7748[0].private + "\n" +
		"listen_port=51820\n" +
		"replace_peers=true\n" +
		"public_key=" + rfc7748[1].public + "\n" +
		"endpoint=10.250.0.2:51820\n" +
		"replace_allowed_ips=true\n" +
		"allowed_ip=10.251.0.2/32\n" +
		"allowed_ip=10.9.0.0/16\n" +
		"public_key=" + rfc7748[0].public + "\n" +
		"endpoint=[fd00::2]:51821\n" +
		"replace_allowed_ips=true\n"
	if got != want {
		t.Errorf("uapi() =\n%s\nwant\n%s", got, want)
	}
}

func TestKind(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join(testutil.ModuleRoot(), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var version string
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == modulePath {
			version = f[1]
		}
	}
	if version == "" {
		t.Fatalf("go.mod does not require %s", modulePath)
	}
	if version != requiredVersion {
		t.Errorf("go.mod requires %s %s, requiredVersion says %s: update it", modulePath, version, requiredVersion)
	}
	// A test binary carries no module list, so this is the fallback; a
	// built ctrbench reports what the build used.
	if got, want := Kind(), "userspace (wireguard-go "+version+")"; got != want {
		t.Errorf("Kind() = %q, want %q", got, want)
	}
	built := &debug.BuildInfo{Deps: []*debug.Module{
		{Path: "golang.org/x/sys", Version: "v0.49.0"},
		{Path: modulePath, Version: "v0.0.0-20990101000000-abcdef012345"},
	}}
	if got := versionIn(built); got != "v0.0.0-20990101000000-abcdef012345" {
		t.Errorf("versionIn(build info) = %q", got)
	}
	built.Deps[1].Replace = &debug.Module{Path: "../wireguard-go"}
	if got := versionIn(built); got != "../wireguard-go" {
		t.Errorf("versionIn(replaced) = %q", got)
	}
}

func TestLoggerKeepsOnlyErrors(t *testing.T) {
	var buf strings.Builder
	l := logger(&buf, "ctbwg0")
	l.Verbosef("handshake %d", 1)
	l.Errorf("failed to %s", "bind")
	if got := buf.String(); !strings.Contains(got, "wireguard-go ctbwg0: ") || !strings.Contains(got, "failed to bind") || strings.Contains(got, "handshake") {
		t.Errorf("logged %q", got)
	}
	quiet := logger(nil, "ctbwg0")
	quiet.Verbosef("x")
	quiet.Errorf("y") // must not panic
}
