package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/odekrun/odek/internal/backoff"
	"github.com/odekrun/odek/internal/telemetry"
	"github.com/sirupsen/logrus"
)

// This file is the Streamable HTTP transport (MCP 2025-03-26 and later):
// every client message is one POST to the server's endpoint; the answer to
// a request comes back as one JSON object or as a text/event-stream that
// may carry the server's requests and notifications first; a GET opens a
// stream for messages the server sends on its own. The session id the
// server assigns in initialize's answer (Mcp-Session-Id) goes with every
// later request, and so does MCP-Protocol-Version.

// HTTPDoer sends HTTP requests (*http.Client satisfies it).
type HTTPDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// Header names of the transport; an operator's headers may not set them.
const (
	headerSession  = "Mcp-Session-Id"       // canonical form
	headerProtocol = "Mcp-Protocol-Version" // canonical form
	headerLastID   = "Last-Event-Id"        // canonical form
)

var reservedHeaders = []string{"Accept", "Content-Type", "Content-Length", "Host", "Connection", "Transfer-Encoding", headerSession, headerProtocol, headerLastID}

// ErrSessionExpired: the server answered 404 to a request carrying the
// session id, so the session is gone; the connection closes and the next
// call starts a new session (the restart policy applies).
var ErrSessionExpired = errors.New("mcpclient: MCP session expired (HTTP 404)")

// checkURL enforces the rules of a remote server's url: http or https, a
// host, no credentials in the URL (they would reach logs; use headers),
// and http:// only to a loopback address unless allowInsecure.
func checkURL(raw string, allowInsecure bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("does not parse as a URL")
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("scheme %q is not http or https", clipDisplay(u.Scheme, 16))
	case u.Host == "" || u.Hostname() == "":
		return errors.New("has no host")
	case u.User != nil:
		return errors.New("carries credentials; put them in headers (with ${ENV} references) instead")
	case u.Fragment != "":
		return errors.New("has a #fragment")
	}
	if u.Scheme == "http" && !allowInsecure && !isLoopbackHost(u.Hostname()) {
		return errors.New("uses http:// to a host that is not loopback; use https:// (or set allow_insecure_http in the operator file)")
	}
	return nil
}

// CheckURL applies the rules of a remote server's url (see
// ServerConfig.URL) and says which one failed.
func CheckURL(raw string, allowInsecure bool) error { return checkURL(raw, allowInsecure) }

// RedactURL is raw for messages: scheme, host and path, no query.
func RedactURL(raw string) string { return redactURL(raw) }

// isLoopbackHost reports whether host is localhost or a loopback IP.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redactURL is the url for messages: scheme, host and path only (a query
// may carry a token).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable url)"
	}
	out := u.Scheme + "://" + u.Host + u.EscapedPath()
	if u.RawQuery != "" {
		out += "?…"
	}
	return clipDisplay(out, 200)
}

// checkHeader checks one configured header: a valid field name that is
// not one the transport sets, and a value without CR, LF or NUL.
func checkHeader(name, value string) error {
	if name == "" {
		return errors.New("empty header name")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return fmt.Errorf("header name has an invalid character at byte %d", i)
		}
	}
	for _, r := range reservedHeaders {
		if strings.EqualFold(name, r) {
			return fmt.Errorf("header %s is set by odek's transport and may not be configured", r)
		}
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return errors.New("header value contains CR, LF or NUL")
	}
	return nil
}

// defaultHTTPClient verifies TLS (the system roots, TLS 1.2 or later) and
// never follows redirects: the configured headers (credentials) must not
// travel to another URL.
func defaultHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("redirects are not followed (the configured headers must not travel to another URL)")
		},
	}
}

// shared is the client every HTTP server without headers of its own
// uses, made on first use (sharedHTTPClient). A sync.Once in static data
// rather than a package-level sync.OnceValue, which is a call that runs at
// program start in every odek process.
var shared struct {
	once sync.Once
	c    *http.Client
}

func sharedHTTPClient() *http.Client {
	shared.once.Do(func() { shared.c = defaultHTTPClient() })
	return shared.c
}

// httpConn is one MCP session over Streamable HTTP. It is safe for
// concurrent use.
type httpConn struct {
	c   *Client
	url string
	u   *url.URL
	hc  HTTPDoer
	log logrus.FieldLogger
	// header holds the configured headers, canonicalised once.
	header http.Header

	nextID atomic.Uint64

	mu       sync.Mutex
	session  string
	version  string
	lastID   string // last SSE event id seen on the GET stream
	pending  map[uint64]chan reply
	err      error
	deadAt   time.Time
	done     chan struct{}
	streamOn bool
	closing  bool // shutdown waits for the background goroutines

	bgCtx    context.Context
	bgCancel context.CancelFunc
	answers  chan struct{} // bounds concurrent answers to server requests
	wg       sync.WaitGroup
}

func newHTTPConn(c *Client) *httpConn {
	hc := c.cfg.HTTPClient
	if hc == nil {
		hc = sharedHTTPClient()
	}
	ctx, cancel := context.WithCancel(context.Background())
	u, _ := url.Parse(c.cfg.URL) // Limits checked it
	header := make(http.Header, len(c.cfg.Headers))
	for k, v := range c.cfg.Headers {
		header.Set(k, v)
	}
	return &httpConn{
		c: c, url: c.cfg.URL, u: u, hc: hc, log: c.log, header: header,
		pending: make(map[uint64]chan reply, 16),
		done:    make(chan struct{}),
		bgCtx:   ctx, bgCancel: cancel,
		answers: make(chan struct{}, 16),
	}
}

func (h *httpConn) negotiated(v string) {
	h.mu.Lock()
	h.version = v
	h.mu.Unlock()
}

func (h *httpConn) alive() bool {
	select {
	case <-h.done:
		return false
	default:
		return true
	}
}

func (h *httpConn) terminal() (time.Time, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.deadAt, h.err
}

// fail closes the session with err (first error wins).
func (h *httpConn) fail(err error) {
	h.mu.Lock()
	if h.err != nil {
		h.mu.Unlock()
		return
	}
	h.err, h.deadAt = err, time.Now()
	close(h.done)
	for id, ch := range h.pending {
		ch <- reply{err: err}
		delete(h.pending, id)
	}
	h.mu.Unlock()
	h.bgCancel()
}

// shutdown ends the session: the server is told with DELETE (best
// effort, within ctx and CloseGrace), background streams stop.
func (h *httpConn) shutdown(ctx context.Context, cause error) error {
	h.mu.Lock()
	session, dead := h.session, h.err != nil
	h.mu.Unlock()
	h.fail(cause)
	if session != "" && !dead {
		dctx, cancel := context.WithTimeout(ctx, h.c.lim.CloseGrace)
		if req, err := h.newRequest(dctx, http.MethodDelete, nil); err == nil {
			if resp, err := h.hc.Do(req); err == nil {
				io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
				resp.Body.Close()
			}
		}
		cancel()
	}
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
	h.wg.Wait()
	return nil
}

// newRequest builds a request to the endpoint with the configured
// headers, the session id and the negotiated version.
func (h *httpConn) newRequest(ctx context.Context, method string, body []byte) (*http.Request, error) {
	hdr := make(http.Header, len(h.header)+4)
	for k, v := range h.header {
		hdr[k] = v
	}
	req := &http.Request{Method: method, URL: h.u, Host: h.u.Host, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: hdr}
	switch method {
	case http.MethodPost:
		hdr["Content-Type"] = contentJSON
		hdr["Accept"] = acceptPost
		req.ContentLength = int64(len(body))
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	case http.MethodGet:
		hdr["Accept"] = acceptStream
	}
	if method == http.MethodPost {
		telemetry.InjectHTTP(ctx, hdr) // issue 24: the request's span, as traceparent/tracestate
	}
	if h.c.cfg.Auth != nil {
		tok, err := h.c.cfg.Auth.Token(ctx, "")
		if err != nil {
			return nil, &AuthRequiredError{Server: h.c.cfg.Name, Err: err}
		}
		hdr["Authorization"] = []string{"Bearer " + tok}
	}
	h.mu.Lock()
	if h.session != "" {
		hdr[headerSession] = []string{h.session}
	}
	if h.version != "" {
		hdr[headerProtocol] = []string{h.version}
	}
	h.mu.Unlock()
	return req.WithContext(ctx), nil
}

// Header values shared by every request (never modified).
var (
	contentJSON  = []string{"application/json"}
	acceptPost   = []string{"application/json, text/event-stream"}
	acceptStream = []string{"text/event-stream"}
)

// transportError describes a failed HTTP exchange without the URL's
// query or any header.
func (h *httpConn) transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("%w: server %q (%s): %v", ErrConnClosed, h.c.cfg.Name, redactURL(h.url), err)
}

// post sends one message and returns the response, or an error for a
// network failure (the session is then closed: the next call reconnects
// under the restart policy) or a 404 on a live session (expired).
func (h *httpConn) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := h.newRequest(ctx, http.MethodPost, body)
	if err != nil {
		return nil, err
	}
	resp, err := h.hc.Do(req)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		resp, err = h.reauthorize(ctx, req, resp)
		if err != nil {
			return nil, err
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		err = h.transportError(err)
		h.fail(err)
		return nil, err
	}
	if resp.StatusCode == http.StatusNotFound && req.Header.Get(headerSession) != "" {
		drain(resp)
		err := fmt.Errorf("%w: server %q", ErrSessionExpired, h.c.cfg.Name)
		h.fail(fmt.Errorf("%w: %w", ErrConnClosed, err))
		return nil, err
	}
	return resp, nil
}

// reauthorize handles a 401 to req: with an Authorizer it asks once for a
// token other than the refused one and resends; a second 401 (or none to
// ask) is an *AuthRequiredError. The session stays open: the operator may
// log in and the next call retries.
func (h *httpConn) reauthorize(ctx context.Context, req *http.Request, resp *http.Response) (*http.Response, error) {
	drain(resp)
	auth := h.c.cfg.Auth
	if auth == nil {
		return nil, &AuthRequiredError{Server: h.c.cfg.Name}
	}
	stale := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	tok, err := auth.Token(ctx, stale)
	if err != nil {
		return nil, &AuthRequiredError{Server: h.c.cfg.Name, Err: err}
	}
	retry := req.Clone(ctx)
	retry.Header.Set("Authorization", "Bearer "+tok)
	if req.GetBody != nil {
		if retry.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	resp, err = h.hc.Do(retry)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		err = h.transportError(err)
		h.fail(err)
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized {
		drain(resp)
		return nil, &AuthRequiredError{Server: h.c.cfg.Name}
	}
	return resp, nil
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// statusError describes a non-success HTTP status, with the start of the
// body (server text, cleaned).
func (h *httpConn) statusError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	msg := fmt.Sprintf("server %q answered HTTP %d", h.c.cfg.Name, resp.StatusCode)
	if t := clipDisplay(strings.TrimSpace(string(b)), 200); t != "" {
		msg += ": " + t
	}
	return fmt.Errorf("%w: %s", ErrProtocol, msg)
}

// request implements transport.
func (h *httpConn) request(ctx context.Context, method string, params []byte, timeout time.Duration, tool string) (json.RawMessage, *wireError, error) {
	w := waiterPool.Get().(*waiter)
	defer waiterPool.Put(w)
	ch := w.ch
	id := h.nextID.Add(1)
	h.mu.Lock()
	if h.err != nil {
		h.mu.Unlock()
		return nil, nil, errConnDead
	}
	h.pending[id] = ch
	h.mu.Unlock()

	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := h.exchange(rctx, id, appendRequest(nil, id, method, params), method == "initialize")
	select {
	case r := <-ch:
		return r.result, r.rpcErr, r.err
	default:
	}
	if err == nil {
		// The POST's stream ended without the answer; the GET stream may
		// still bring it (a resumed stream).
		err = fmt.Errorf("%w: server %q: the response stream for %s ended without its answer", ErrProtocol, h.c.cfg.Name, method)
		if h.streaming() {
			w.timer.Reset(time.Until(deadlineOf(rctx)))
			select {
			case r := <-ch:
				w.timer.Stop()
				return r.result, r.rpcErr, r.err
			case <-w.timer.C:
			case <-ctx.Done():
				w.timer.Stop()
			}
		}
	}
	h.mu.Lock()
	_, stillPending := h.pending[id]
	delete(h.pending, id)
	h.mu.Unlock()
	if !stillPending {
		r := <-ch
		return r.result, r.rpcErr, r.err
	}
	switch {
	case ctx.Err() != nil:
		h.cancelled(id, "cancelled by the client")
		return nil, nil, ctx.Err()
	case rctx.Err() != nil:
		h.cancelled(id, "timeout")
		return nil, nil, &TimeoutError{Server: h.c.cfg.Name, Tool: tool, Method: method, Limit: timeout}
	}
	return nil, nil, err
}

func deadlineOf(ctx context.Context) time.Time {
	dl, _ := ctx.Deadline()
	return dl
}

// cancelled sends notifications/cancelled for a request given up on.
func (h *httpConn) cancelled(id uint64, reason string) {
	if h.alive() {
		_ = h.notify("notifications/cancelled", cancelledParams(id, reason))
	}
}

// exchange POSTs one request and reads its answer: one JSON object, or an
// event stream until the answer to id arrived (the stream's other
// messages are routed as they come).
func (h *httpConn) exchange(ctx context.Context, id uint64, body []byte, initialize bool) error {
	resp, err := h.post(ctx, body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return h.statusError(resp)
	}
	if initialize {
		if s := resp.Header.Get(headerSession); s != "" {
			if strings.ContainsAny(s, "\r\n\x00") || len(s) > 1024 {
				drain(resp)
				return fmt.Errorf("%w: server %q sent an unusable %s", ErrProtocol, h.c.cfg.Name, headerSession)
			}
			h.mu.Lock()
			h.session = s
			h.mu.Unlock()
		}
	}
	limit := h.c.lim.MaxResponseBytes
	switch mt := mediaType(resp.Header.Get("Content-Type")); mt {
	case "application/json":
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
		if err != nil {
			return h.readErr(ctx, err)
		}
		if int64(len(b)) > limit {
			return h.tooLong(int64(len(b)))
		}
		h.routeBody(b)
		return nil
	case "text/event-stream":
		lr := getLineReader(resp.Body, limit)
		err := h.readStream(ctx, lr, id, false)
		if err != nil || lr.atEOF {
			putLineReader(lr)
			resp.Body.Close()
			return err
		}
		// The answer came; the server normally ends the stream right
		// after it. Read on in the background (routing anything more),
		// so the connection is reused instead of torn down.
		done := make(chan struct{})
		if !h.goBG(func() {
			defer close(done)
			stop := context.AfterFunc(h.bgCtx, func() { resp.Body.Close() })
			h.readStream(h.bgCtx, lr, 0, false)
			stop()
			putLineReader(lr)
			resp.Body.Close()
		}) {
			resp.Body.Close()
			return nil
		}
		// Wait a moment for the end of the stream, which is usually on its
		// way: the connection is then idle again before the next call.
		t := time.NewTimer(streamEndWait)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
		return nil
	default:
		resp.Body.Close()
		return fmt.Errorf("%w: server %q answered Content-Type %q (want application/json or text/event-stream)", ErrProtocol, h.c.cfg.Name, clipDisplay(mt, 64))
	}
}

// streamEndWait is how long a call waits, after its answer, for the
// server to end the event stream (the connection is reused only then).
const streamEndWait = 5 * time.Millisecond

// mediaType is the media type of a Content-Type value, lower case.
func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	for i := 0; i < len(ct); i++ {
		if c := ct[i]; 'A' <= c && c <= 'Z' {
			mt, _, _ := mime.ParseMediaType(ct)
			return mt
		}
	}
	return ct
}

// streamReader is a pooled line reader over one event stream.
type streamReader struct {
	*lineReader
	atEOF bool
}

var streamReaders sync.Pool

func getLineReader(r io.Reader, limit int64) *streamReader {
	if sr, ok := streamReaders.Get().(*streamReader); ok {
		sr.br.Reset(r)
		sr.limit, sr.atEOF = limit, false
		return sr
	}
	return &streamReader{lineReader: &lineReader{br: bufio.NewReaderSize(r, 8<<10), limit: limit}}
}

func putLineReader(sr *streamReader) {
	sr.br.Reset(nil)
	sr.release()
	streamReaders.Put(sr)
}

func (h *httpConn) readErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return h.transportError(err)
}

// tooLong closes the session: one message exceeded max_response_bytes
// (the rule of the stdio transport).
func (h *httpConn) tooLong(observed int64) error {
	h.log.WithField("limit", h.c.lim.MaxResponseBytes).Error("HTTP response message exceeds max_response_bytes; closing the session")
	err := &LineTooLongError{Server: h.c.cfg.Name, Limit: h.c.lim.MaxResponseBytes, Observed: observed}
	h.fail(err)
	return err
}

// routeBody routes a JSON body: one message or a batch of them.
func (h *httpConn) routeBody(b []byte) {
	t := bytes.TrimSpace(b)
	if len(t) > 0 && t[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(t, &batch) == nil {
			for _, m := range batch {
				h.route(m)
			}
		}
		return
	}
	h.route(t)
}

// readStream reads server-sent events and routes each message, until the
// stream ends, or (want != 0) the answer to want was routed. An event's
// data is bounded by max_response_bytes.
func (h *httpConn) readStream(ctx context.Context, lr *streamReader, want uint64, background bool) error {
	limit := lr.limit
	var data []byte
	hasData := false
	for {
		line, err := lr.next()
		if err != nil {
			var tl *lineTooLong
			switch {
			case errors.As(err, &tl):
				return h.tooLong(tl.observed)
			case err == io.EOF || errors.Is(err, errPartialLine):
				lr.atEOF = true
				return nil
			}
			lr.atEOF = true
			return h.readErr(ctx, err)
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 { // dispatch the event
			if hasData {
				if h.route(data) == want && want != 0 {
					return nil
				}
			}
			data, hasData = data[:0], false
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			if int64(len(data)+len(value)) > limit {
				return h.tooLong(int64(len(data) + len(value)))
			}
			data = append(data, value...)
			hasData = true
		case "id":
			if background && !bytes.ContainsRune(value, 0) && len(value) <= 256 {
				h.mu.Lock()
				h.lastID = string(value)
				h.mu.Unlock()
			}
		}
	}
}

// route handles one message from the server and returns the id of the
// response it delivered (0 for anything else).
func (h *httpConn) route(b []byte) uint64 {
	msg, kind, id := decodeLine(b)
	switch kind {
	case kindResponse:
		h.mu.Lock()
		ch, ok := h.pending[id]
		if ok {
			delete(h.pending, id)
		}
		h.mu.Unlock()
		if !ok {
			h.log.WithField("id", id).Debug("dropped a response with an unknown id")
			return 0
		}
		r := reply{result: msg.Result, rpcErr: msg.Error}
		if msg.Result == nil && msg.Error == nil {
			r.err = fmt.Errorf("%w: server %q: response %d has neither result nor error", ErrProtocol, h.c.cfg.Name, id)
		}
		ch <- r
		return id
	case kindRequest:
		if len(msg.ID) > 256 {
			return 0
		}
		req := srvRequest{id: append([]byte(nil), msg.ID...), method: msg.Method}
		if len(msg.Params) <= maxServerRequestParams {
			req.params = append([]byte(nil), msg.Params...)
		}
		select {
		case h.answers <- struct{}{}:
		default:
			h.log.Warn("server→client request flood: answer dropped")
			return 0
		}
		if !h.goBG(func() {
			defer func() { <-h.answers }()
			line := h.c.answer(nil, req.id, req.method, req.params)
			h.send(bytes.TrimSuffix(line, []byte("\n")))
		}) {
			<-h.answers
		}
	case kindNotification:
		h.c.notified(msg.Method, msg.Params)
	default:
		h.log.WithField("bytes", len(b)).Debug("skipped a message that is not JSON-RPC")
	}
	return 0
}

// send POSTs a notification or an answer (no response body expected).
func (h *httpConn) send(body []byte) error {
	ctx, cancel := context.WithTimeout(h.bgCtx, h.c.lim.Timeout)
	defer cancel()
	resp, err := h.post(ctx, body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
		return h.statusError(resp)
	}
	drain(resp)
	return nil
}

// notify implements transport. After notifications/initialized the GET
// stream for server-initiated messages is opened.
func (h *httpConn) notify(method string, params []byte) error {
	if !h.alive() {
		_, err := h.terminal()
		return err
	}
	line := appendNotification(nil, method, params)
	if err := h.send(bytes.TrimSuffix(line, []byte("\n"))); err != nil {
		return err
	}
	if method == "notifications/initialized" {
		h.startStream()
	}
	return nil
}

func (h *httpConn) streaming() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.streamOn
}

// startStream opens the GET stream in the background and keeps it open:
// on a dropped stream it reconnects (with Last-Event-ID) after a backoff
// of 1s doubling to 30s; a server without one (405) is left alone.
func (h *httpConn) startStream() {
	h.mu.Lock()
	if h.streamOn || h.err != nil {
		h.mu.Unlock()
		return
	}
	h.streamOn = true
	h.mu.Unlock()
	h.goBG(func() {
		defer func() {
			h.mu.Lock()
			h.streamOn = false
			h.mu.Unlock()
		}()
		failures := 0 // reconnects since the stream last delivered an event
		for h.alive() {
			got, err := h.getStream()
			if errors.Is(err, errNoStream) || !h.alive() {
				return
			}
			if got {
				failures = 0
			}
			if err != nil {
				h.log.WithError(err).Debug("MCP event stream dropped; reconnecting")
			}
			failures++
			t := time.NewTimer(backoff.Delay(failures, time.Second, 30*time.Second, 0, 0))
			select {
			case <-t.C:
			case <-h.bgCtx.Done():
				t.Stop()
				return
			}
		}
	})
}

// goBG runs fn on a goroutine shutdown waits for, unless shutdown has
// begun (then it reports false and fn does not run).
func (h *httpConn) goBG(fn func()) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return false
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		fn()
	}()
	return true
}

var errNoStream = errors.New("server offers no event stream")

// getStream runs one GET stream until it ends; got reports that it was
// opened.
func (h *httpConn) getStream() (got bool, err error) {
	req, err := h.newRequest(h.bgCtx, http.MethodGet, nil)
	if err != nil {
		return false, err
	}
	h.mu.Lock()
	if h.lastID != "" {
		req.Header.Set(headerLastID, h.lastID)
	}
	h.mu.Unlock()
	resp, err := h.hc.Do(req)
	if err != nil {
		return false, err
	}
	if resp.StatusCode == http.StatusUnauthorized {
		if resp, err = h.reauthorize(h.bgCtx, req, resp); err != nil {
			return false, err
		}
	}
	switch {
	case resp.StatusCode == http.StatusMethodNotAllowed:
		drain(resp)
		return false, errNoStream
	case resp.StatusCode == http.StatusNotFound:
		drain(resp)
		h.fail(fmt.Errorf("%w: %w: server %q", ErrConnClosed, ErrSessionExpired, h.c.cfg.Name))
		return false, errNoStream
	case resp.StatusCode != http.StatusOK:
		return false, h.statusError(resp)
	}
	defer resp.Body.Close()
	if mediaType(resp.Header.Get("Content-Type")) != "text/event-stream" {
		return false, errNoStream
	}
	lr := getLineReader(resp.Body, h.c.lim.MaxResponseBytes)
	defer putLineReader(lr)
	return true, h.readStream(h.bgCtx, lr, 0, true)
}
