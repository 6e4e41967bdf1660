// Package clitest runs the real command-line tools a script or a printed command uses (gcloud,
// kubectl) against local fakes of their APIs, so that a test checks what the real tool does with
// a script, not what its author expected it to do.
package clitest

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Call is one request a tool made to a fake Google API.
type Call struct {
	Method string
	// Host is the API's host, such as compute.googleapis.com.
	Host string
	// Path is the request path without the query.
	Path string
	Body string
}

// String is the call as "METHOD host/path", the form tests compare.
func (c Call) String() string { return c.Method + " " + c.Host + c.Path }

// Google is a fake of Google's APIs behind an HTTPS proxy: gcloud is told to use the proxy and to
// trust the fake's own certificate authority, so that every API it calls (including those that
// have no api_endpoint_overrides property in gcloud 528, such as Service Networking and Managed
// Lustre) reaches Handler, addressed by its real host name.
type Google struct {
	// Handler answers the API requests; r.Host is the API's host name.
	Handler http.Handler

	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caFile string
	proxy  net.Listener

	mu    sync.Mutex
	calls []Call
	certs map[string]*tls.Certificate
}

// NewGoogle starts the fake; it stops when the test ends.
func NewGoogle(t testing.TB, handler http.Handler) *Google {
	t.Helper()
	g := &Google{Handler: handler, certs: map[string]*tls.Certificate{}}
	var err error
	if g.caKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "clitest fake Google CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &g.caKey.PublicKey, g.caKey)
	if err != nil {
		t.Fatal(err)
	}
	if g.ca, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	g.caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(g.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if g.proxy, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	go g.serve()
	t.Cleanup(func() { _ = g.proxy.Close() })
	return g
}

// Calls are the requests made so far, in order.
func (g *Google) Calls() []Call {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Call(nil), g.calls...)
}

// GcloudEnv is the environment that points gcloud at the fake: a configuration directory of its
// own, no credentials, the proxy and its certificate authority, no prompts and no update checks.
func (g *Google) GcloudEnv(t testing.TB) []string {
	t.Helper()
	port := strconv.Itoa(g.proxy.Addr().(*net.TCPAddr).Port)
	return []string{
		"CLOUDSDK_CONFIG=" + t.TempDir(),
		"CLOUDSDK_AUTH_DISABLE_CREDENTIALS=true",
		"CLOUDSDK_PROXY_TYPE=http",
		"CLOUDSDK_PROXY_ADDRESS=127.0.0.1",
		"CLOUDSDK_PROXY_PORT=" + port,
		"CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE=" + g.caFile,
		"CLOUDSDK_CORE_DISABLE_PROMPTS=1",
		"CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=true",
		"CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=true",
		"CLOUDSDK_CORE_CHECK_GCE_METADATA=false",
		"NO_PROXY=", "no_proxy=", "HTTPS_PROXY=", "https_proxy=",
	}
}

// HTTPClient is an HTTP client that reaches the fake as Google's API clients reach Google: by the
// APIs' real host names and paths, through the proxy, trusting the fake's certificate authority.
// Given to google.golang.org/api's clients (option.WithHTTPClient), it replaces their
// credentials as well.
func (g *Google) HTTPClient() *http.Client {
	roots := x509.NewCertPool()
	roots.AddCert(g.ca)
	proxy := &url.URL{Scheme: "http", Host: g.proxy.Addr().String()}
	return &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyURL(proxy), TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}},
		Timeout:   30 * time.Second,
	}
}

func (g *Google) serve() {
	for {
		conn, err := g.proxy.Accept()
		if err != nil {
			return
		}
		go g.tunnel(conn)
	}
}

// tunnel answers one CONNECT with a TLS server for the requested host, then serves Handler on it.
func (g *Google) tunnel(conn net.Conn) {
	defer func() { _ = conn.Close() }()
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil || req.Method != http.MethodConnect {
		_, _ = io.WriteString(conn, "HTTP/1.1 405 Method Not Allowed\r\n\r\n")
		return
	}
	host, _, _ := net.SplitHostPort(req.Host)
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	tlsConn := tls.Server(conn, &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return g.cert(host) }})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		r.Host = host
		g.mu.Lock()
		g.calls = append(g.calls, Call{Method: r.Method, Host: host, Path: r.URL.Path, Body: string(body)})
		g.mu.Unlock()
		g.Handler.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	_ = srv.Serve(&oneConn{conn: tlsConn})
}

func (g *Google) cert(host string) (*tls.Certificate, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.certs[host]; ok {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(int64(len(g.certs) + 2)),
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, g.ca, &key.PublicKey, g.caKey)
	if err != nil {
		return nil, fmt.Errorf("certificate for %s: %w", host, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	g.certs[host] = c
	return c, nil
}

// oneConn is a listener that hands out one connection, then blocks until it is closed.
type oneConn struct {
	conn net.Conn
	once sync.Once
	done chan struct{}
	mu   sync.Mutex
}

func (l *oneConn) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.done == nil {
		l.done = make(chan struct{})
	}
	done := l.done
	l.mu.Unlock()
	var c net.Conn
	l.once.Do(func() { c = &closeNotify{Conn: l.conn, done: done} })
	if c != nil {
		return c, nil
	}
	<-done
	return nil, net.ErrClosed
}
func (l *oneConn) Close() error   { return nil }
func (l *oneConn) Addr() net.Addr { return l.conn.LocalAddr() }

type closeNotify struct {
	net.Conn
	done chan struct{}
	once sync.Once
}

func (c *closeNotify) Close() error {
	c.once.Do(func() { close(c.done) })
	return c.Conn.Close()
}

// NotFound answers every request as an API that knows no such resource, in Google's error shape.
func NotFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = fmt.Fprintf(w, `{"error": {"code": 404, "message": "The resource '%s' was not found", "status": "NOT_FOUND"}}`, r.URL.Path)
	})
}
