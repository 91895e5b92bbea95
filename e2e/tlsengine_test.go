package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tlsEngine puts an engine's unix socket behind TLS on loopback, as a
// user's remote engine is reached (dockerd --tlsverify: the engine
// verifies the client's certificate, the client the engine's): a test
// CA signs a server certificate for 127.0.0.1 and a client certificate,
// written as Docker's CLI expects them (ca.pem, cert.pem, key.pem in
// dir). Every accepted connection has passed the handshake with a
// client certificate of that CA; verified counts them.
type tlsEngine struct {
	Addr     string // tcp://127.0.0.1:port
	Dir      string // ca.pem, cert.pem, key.pem for the client
	verified atomic.Int64
}

func startTLSEngine(t *testing.T, socket string) *tlsEngine {
	t.Helper()
	dir := t.TempDir()
	caKey, caCert, caDER := newCA(t)
	srvKey, srvDER := newLeaf(t, caKey, caCert, x509.ExtKeyUsageServerAuth, 2)
	cliKey, cliDER := newLeaf(t, caKey, caCert, x509.ExtKeyUsageClientAuth, 3)
	writePEM(t, filepath.Join(dir, "ca.pem"), "CERTIFICATE", caDER)
	writePEM(t, filepath.Join(dir, "cert.pem"), "CERTIFICATE", cliDER)
	kb, err := x509.MarshalECPrivateKey(cliKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, "key.pem"), "EC PRIVATE KEY", kb)

	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	})
	if err != nil {
		t.Fatal(err)
	}
	e := &tlsEngine{Addr: "tcp://" + ln.Addr().String(), Dir: dir}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				tc := c.(*tls.Conn)
				_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
				if err := tc.Handshake(); err != nil || len(tc.ConnectionState().PeerCertificates) == 0 {
					return
				}
				_ = tc.SetDeadline(time.Time{})
				e.verified.Add(1)
				u, err := net.Dial("unix", socket)
				if err != nil {
					return
				}
				defer u.Close()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(u, tc); u.(*net.UnixConn).CloseWrite(); done <- struct{}{} }()
				go func() { _, _ = io.Copy(tc, u); _ = tc.CloseWrite(); done <- struct{}{} }()
				<-done
				<-done
			}()
		}
	}()
	return e
}

func newCA(t *testing.T) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ctrbench test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, der
}

func newLeaf(t *testing.T, caKey *ecdsa.PrivateKey, ca *x509.Certificate, usage x509.ExtKeyUsage, serial int64) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "ctrbench test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return key, der
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
