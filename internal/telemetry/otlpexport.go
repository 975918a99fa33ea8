package telemetry

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
)

// exporter sends spans to an OTLP collector over net/http: as
// http/protobuf (a POST of the encoded request to the /v1/traces URL) or as
// OTLP/gRPC (the same bytes in one gRPC message, over HTTP/2 — cleartext
// HTTP/2 with prior knowledge for an http:// endpoint, TLS for https://).
// It replaces the upstream otlptracehttp/otlptracegrpc exporters so that
// the odek binary links neither grpc nor the protobuf runtime (issue 25);
// both protocols stay supported and tested against real servers.
type exporter struct {
	url     string // where to POST
	grpc    bool
	headers map[string]string
	timeout time.Duration
	client  *http.Client

	mu     sync.Mutex
	closed bool
}

// gRPC method of the OTLP trace service.
const grpcExportPath = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

// maxErrBody bounds how much of a collector's error reply is read.
const maxErrBody = 4 << 10

func newOTLPExporter(cfg Config, timeout time.Duration) (*exporter, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: endpoint %q: want an http:// or https:// URL", ErrConfig, cfg.Endpoint)
	}
	e := &exporter{url: cfg.Endpoint, headers: cfg.Headers, timeout: timeout}
	// http.DefaultTransport's settings. Its clone would also set HTTP/2 up
	// (ForceAttemptHTTP2), which only a TLS endpoint can use for
	// http/protobuf: for an http:// collector that is ~15 µs of a traced
	// process's start for nothing (docs/BENCHMARKS.md).
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     u.Scheme == "https",
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	if cfg.Protocol == ProtocolGRPC {
		e.grpc = true
		u.Path = strings.TrimRight(u.Path, "/") + grpcExportPath
		e.url = u.String()
		var p http.Protocols
		if u.Scheme == "http" {
			p.SetUnencryptedHTTP2(true) // h2c with prior knowledge, as gRPC clients do
		} else {
			p.SetHTTP2(true)
		}
		tr.Protocols = &p
	}
	e.client = &http.Client{Transport: tr}
	return e, nil
}

// ExportSpans sends spans, and the liteSpans already encoded in the
// chunks of lite (under resource res), in one request, retrying a collector that is
// unavailable or overloaded with a growing pause, within the export
// timeout (the queue bounds the whole export with it too).
func (e *exporter) ExportSpans(ctx context.Context, spans []spanData, lite [][]byte, res *resource.Resource) error {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return errors.New("telemetry: exporter is shut down")
	}
	if len(spans) == 0 && len(lite) == 0 {
		return nil
	}
	body := encodeSpans(spans, lite, res)
	if e.grpc {
		framed := make([]byte, 5, 5+len(body)) // uncompressed flag, big-endian length
		binary.BigEndian.PutUint32(framed[1:], uint32(len(body)))
		body = append(framed, body...)
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	wait, maxWait := e.timeout/20, e.timeout/4
	for {
		retry, err := e.send(ctx, body)
		if err == nil || !retry {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (%v)", err, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, maxWait)
	}
}

// send makes one attempt; retry says whether another may succeed.
func (e *exporter) send(ctx context.Context, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	for k, v := range e.headers {
		req.Header.Set(k, v)
	}
	if e.grpc {
		req.Header.Set("Content-Type", "application/grpc+proto")
		req.Header.Set("TE", "trailers")
	} else {
		req.Header.Set("Content-Type", "application/x-protobuf")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		// Not retried: a collector that refuses the connection (or is not
		// there) fails the export at once, so it never delays a command's
		// exit (docs/OBSERVABILITY.md); the next batch tries again.
		return false, fmt.Errorf("telemetry: export: %w", err)
	}
	defer resp.Body.Close()
	if e.grpc {
		return grpcResult(resp)
	}
	if resp.StatusCode/100 == 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrBody))
		return false, nil
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrBody))
	err = fmt.Errorf("telemetry: export: collector answered %s: %.200s", resp.Status, bytes.TrimSpace(msg))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true, err
	}
	return false, err
}

// grpcResult reads a gRPC reply: the status is in the trailers (or, for a
// reply without a body, in the headers).
func grpcResult(resp *http.Response) (bool, error) {
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("telemetry: export: collector answered %s", resp.Status)
		return resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests ||
			resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusGatewayTimeout, err
	}
	// The reply message (ExportTraceServiceResponse, a partial-success
	// report) is not needed; drain it so the trailers arrive.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	st := resp.Trailer.Get("Grpc-Status")
	msg := resp.Trailer.Get("Grpc-Message")
	if st == "" {
		st, msg = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	if st == "" {
		return true, errors.New("telemetry: export: gRPC reply without grpc-status")
	}
	code, err := strconv.Atoi(st)
	if err != nil {
		return false, fmt.Errorf("telemetry: export: bad grpc-status %q", st)
	}
	if code == 0 {
		return false, nil
	}
	if m, err := url.PathUnescape(msg); err == nil {
		msg = m
	}
	err = fmt.Errorf("telemetry: export: collector answered gRPC status %d: %.200s", code, msg)
	switch code {
	case 1, 4, 8, 10, 11, 14, 15: // cancelled, deadline, exhausted, aborted, out of range, unavailable, data loss
		return true, err
	}
	return false, err
}

// Shutdown makes later exports fail and closes idle connections.
func (e *exporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.client.CloseIdleConnections()
	return ctx.Err()
}
