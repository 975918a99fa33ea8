package queue_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/odekrun/odek/queue/queuetest"
)

// testCA writes a CA and a server certificate for 127.0.0.1 signed by it
// into dir and returns the file paths and a pool holding the CA.
func testCA(t *testing.T, dir, name string) (caFile, certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "redis"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"redis.test"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	write := func(f, typ string, b []byte) string {
		p := filepath.Join(dir, name+"-"+f)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pool = x509.NewCertPool()
	pool.AddCert(caCert)
	return write("ca.pem", "CERTIFICATE", caDER), write("cert.pem", "CERTIFICATE", der), write("key.pem", "EC PRIVATE KEY", kb), pool
}

// A real redis-server that speaks only TLS: a rediss:// URL with tls_ca
// reaches it and runs the queue; the system roots, another CA or a server
// name the certificate does not hold are refused (verification is never
// skipped).
func TestRedisURLTLS(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key, pool := testCA(t, dir, "good")
	otherCA, _, _, _ := testCA(t, dir, "other")
	srv := queuetest.StartServer(t, queuetest.ServerOptions{
		Args: []string{"--port", "0", "--tls-port", "{port}", "--tls-cert-file", cert, "--tls-key-file", key,
			"--tls-ca-cert-file", ca, "--tls-auth-clients", "no"},
		TLS: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"},
	})
	ctx := context.Background()
	ping := func(url string) error {
		c, _, err := queue.NewRedisClient(url)
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		defer c.Close()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return c.Ping(cctx).Err()
	}
	good := "rediss://" + srv.Addr + "/0?tls_ca=" + ca + "&max_retries=-1"
	if err := ping(good); err != nil {
		t.Fatalf("rediss with tls_ca: %v", err)
	}
	if err := ping("rediss://" + srv.Addr + "/0?tls_ca=" + ca + "&tls_server_name=redis.test&max_retries=-1"); err != nil {
		t.Fatalf("rediss with a server name in the certificate: %v", err)
	}
	for _, bad := range []string{
		"rediss://" + srv.Addr + "/0?max_retries=-1",                                                     // system roots
		"rediss://" + srv.Addr + "/0?max_retries=-1&tls_ca=" + otherCA,                                   // another CA
		"rediss://" + srv.Addr + "/0?max_retries=-1&tls_ca=" + ca + "&tls_server_name=not-redis.example", // wrong name
	} {
		if err := ping(bad); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s: %v, want a certificate error", bad, err)
		}
	}
	c, _, _ := queue.NewRedisClient(good)
	defer c.Close()
	q, err := queue.NewRedis(ctx, c, queue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := q.Enqueue(ctx, queue.Job{ChatID: 1, Goal: "over TLS"}); err != nil {
		t.Fatal(err)
	}
	if ls, err := q.Claim(ctx, "w", 1, time.Second); err != nil || len(ls) != 1 {
		t.Fatalf("claim over TLS: %v %v", ls, err)
	}
}
