package llm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/odekrun/odek/agent"
	"io"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	expbackoff "github.com/odekrun/odek/internal/backoff"
	"github.com/odekrun/odek/internal/toolschema"
)

// Defaults applied to zero Config fields.
const (
	DefaultMaxAttempts    = 4
	DefaultIdleTimeout    = 90 * time.Second
	DefaultRequestTimeout = 10 * time.Minute
	DefaultBaseBackoff    = 500 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
)

// Config configures a Client. The zero value of every field but BaseURL is
// usable.
type Config struct {
	// BaseURL is the API root, e.g. "https://api.openai.com/v1"; requests
	// go to BaseURL + "/chat/completions" (a query string is kept).
	// Required; http or https with a host; a trailing slash is tolerated.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>". Empty sends no
	// Authorization header (local servers). It never appears in errors.
	APIKey string
	// DisableStreaming asks for a single JSON body instead of an SSE
	// stream. The zero value streams.
	DisableStreaming bool
	// MaxAttempts is the total number of HTTP attempts per Complete call,
	// retries included. 0 means DefaultMaxAttempts; 1 means no retries.
	MaxAttempts int
	// IdleTimeout fails a stream that sends no byte for longer than this
	// with *IdleTimeoutError (retried). 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// RequestTimeout bounds each attempt: until the response headers when
	// streaming, until the end of the body otherwise; exceeding it fails
	// the attempt with *RequestTimeoutError (retried). 0 means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// BaseBackoff and MaxBackoff shape the jittered exponential wait
	// between attempts (see backoff). 0 means DefaultBaseBackoff and
	// DefaultMaxBackoff. A provider's Retry-After replaces the computed
	// wait when it is at most RetryAfterCapFactor × MaxBackoff.
	BaseBackoff, MaxBackoff time.Duration
	// HTTPClient sends the requests. nil means a client of its own with a
	// pooled transport, HTTP/2, and connect/TLS timeouts; the client's
	// Timeout should be 0 (per-attempt limits are RequestTimeout and
	// IdleTimeout).
	HTTPClient *http.Client
	// OnRetry, when set, is called before each wait between attempts.
	OnRetry func(Retry)
	// Provider is the name of a provider preset (see Presets), or "" to
	// recognise it from BaseURL's host. It selects the endpoint's quirks:
	// tool-schema adaptations (toolschema.QuirksFor) and the provider
	// fields it refuses to get back. An unknown name has none.
	Provider string
	// StrictToolModels lists the models for which tools are declared with
	// OpenAI's "strict": true (schemas adapted to strict mode). Empty: never.
	StrictToolModels []string
	// ResponseFormatModels lists the models whose endpoint accepts
	// response_format {"type":"json_schema"}: a Request with an
	// OutputSchema sends it to them (strict when the schema already meets
	// strict mode's rules, else as guidance). Other models get none (the
	// caller checks the answer either way). Empty: never.
	ResponseFormatModels []string
	// CacheBreakpointModels lists the models whose requests mark the
	// system prompt and the last stable message as prompt-cache
	// breakpoints (content part with cache_control; Anthropic models
	// through OpenRouter, LiteLLM or another compatible gateway cache only
	// there). Empty: never.
	CacheBreakpointModels []string
	// KeepThinkTags leaves a leading <think>…</think> block in the answer.
	// The zero value moves it out of Message.Content into
	// Response.Reasoning (models served by Ollama, vLLM, llama.cpp or
	// LM Studio without a reasoning parser emit their reasoning that way).
	KeepThinkTags bool
	// Sleep waits between attempts; it must return ctx's error early when
	// ctx ends. nil means a real timer honouring ctx. Tests inject it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Retry describes a failed attempt that is about to be retried.
type Retry struct {
	Attempt int           // the attempt that failed, from 1
	Wait    time.Duration // wait before the next attempt
	Err     error         // why the attempt failed
	Partial bool          // CompleteStream's delta had received content from the failed attempt
}

// Client calls one chat-completions endpoint. It is safe for concurrent use
// and holds no goroutines between calls. Requests are not retained after
// Complete returns; the Response belongs to the caller.
type Client struct {
	cfg      Config
	endpoint string // BaseURL + "/chat/completions"
	auth     string // "Bearer <key>", or "" for none
	hc       *http.Client
	sleep    func(context.Context, time.Duration) error
	cache    msgCache // encoded messages, reused across calls
	schema   schemaOpts
}

// New validates cfg and returns a Client. Errors wrap ErrInvalidRequest.
func New(cfg Config) (*Client, error) {
	endpoint, err := endpointURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	switch {
	case cfg.MaxAttempts < 0:
		return nil, fmt.Errorf("%w: MaxAttempts is %d, want >= 0", ErrInvalidRequest, cfg.MaxAttempts)
	case cfg.IdleTimeout < 0:
		return nil, fmt.Errorf("%w: IdleTimeout is %v, want >= 0", ErrInvalidRequest, cfg.IdleTimeout)
	case cfg.RequestTimeout < 0:
		return nil, fmt.Errorf("%w: RequestTimeout is %v, want >= 0", ErrInvalidRequest, cfg.RequestTimeout)
	case cfg.BaseBackoff < 0 || cfg.MaxBackoff < 0:
		return nil, fmt.Errorf("%w: BaseBackoff %v and MaxBackoff %v must be >= 0", ErrInvalidRequest, cfg.BaseBackoff, cfg.MaxBackoff)
	case strings.ContainsAny(cfg.APIKey, "\r\n"):
		return nil, fmt.Errorf("%w: APIKey contains a line break", ErrInvalidRequest)
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.BaseBackoff == 0 {
		cfg.BaseBackoff = DefaultBaseBackoff
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	provider := cfg.Provider
	if provider == "" {
		provider = PresetForURL(cfg.BaseURL)
	}
	preset, _ := LookupPreset(provider)
	c := &Client{cfg: cfg, endpoint: endpoint, hc: cfg.HTTPClient, sleep: cfg.Sleep,
		schema: schemaOpts{quirks: toolschema.QuirksFor(provider), strictModels: slices.Clone(cfg.StrictToolModels),
			dropEcho: preset.dropEcho, noStreamOpts: preset.noStreamOptions, breakpoints: slices.Clone(cfg.CacheBreakpointModels),
			responseFormat: slices.Clone(cfg.ResponseFormatModels)}}
	if cfg.APIKey != "" {
		c.auth = "Bearer " + cfg.APIKey
	}
	if c.hc == nil {
		c.hc = &http.Client{Transport: defaultTransport(strings.HasPrefix(endpoint, "https:"))}
	}
	if c.sleep == nil {
		c.sleep = sleepCtx
	}
	return c, nil
}

// endpointURL validates a base URL and returns the chat-completions URL.
func endpointURL(base string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	switch {
	case base == "":
		return "", fmt.Errorf("%w: BaseURL is empty", ErrInvalidRequest)
	case err != nil:
		return "", fmt.Errorf("%w: BaseURL does not parse as a URL", ErrInvalidRequest)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%w: BaseURL scheme is %q, want http or https", ErrInvalidRequest, u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return "", fmt.Errorf("%w: BaseURL has no host", ErrInvalidRequest)
	case u.Fragment != "":
		return "", fmt.Errorf("%w: BaseURL has a #fragment", ErrInvalidRequest)
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/chat/completions"
	u.RawPath = ""
	return u.String(), nil
}

// defaultTransport is the model client's transport. tls says whether the
// endpoint is https: only then can HTTP/2 be negotiated, so only then is
// it asked for. For a plaintext endpoint (a model server on the same host
// or network) the transport speaks HTTP/1.1 either way, but
// ForceAttemptHTTP2 would still build and register the HTTP/2 transport
// on the first request — code and memory that `odek run` against a local
// model never uses (issue 25, docs/BENCHMARKS.md round 4). A plaintext
// endpoint that redirects to https is then served over HTTP/1.1.
func defaultTransport(tls bool) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     tls,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error { return expbackoff.Sleep(ctx, d) }

// Complete sends req and returns the assembled reply, retrying transient
// failures (see classify, retryableTransportError) up to
// Config.MaxAttempts with jittered backoff.
//
// Streamed tool calls are assembled by their "index": id, type and name
// take the first non-empty value, arguments are concatenated, and calls
// come out in index order. A delta without an index continues the latest
// call unless it carries a different id, which starts a new call. Missing
// ids stay empty (the caller assigns its own deterministic ids, e.g. the
// agent's it<iteration>-call<index>), missing types become "function", and empty
// arguments "{}". Only choice 0 is used; reasoning_content/reasoning never
// reach Message.Content, a refusal does. A stream that ends after a
// finish_reason without [DONE] is accepted; one that ends before is
// ErrStreamInterrupted. A reply in the other mode than asked (JSON to a
// streaming request, or SSE to a plain one) is accepted.
//
// Errors: ctx's error when ctx ends (at any point: waiting for headers,
// reading the stream, sleeping between attempts); *APIError (possibly
// wrapping ErrUnauthorized, ErrQuotaExhausted, ErrContextLength);
// *IdleTimeoutError, *RequestTimeoutError, ErrStreamInterrupted,
// ErrMalformedResponse, *LineTooLongError, *ResponseTooLargeError. When
// every allowed attempt failed with a retryable error (MaxAttempts 1
// included), the last error is wrapped in ErrRetriesExhausted. A
// Retry-After beyond the cap, or a wait that would outlast ctx's deadline,
// ends the call early with the last error. ErrInvalidRequest: the request
// cannot be sent (nothing was sent).
//
// With delta (CompleteStream), every attempt after the first begins with
// delta(agent.Delta{Restart: true}), and each piece of answer content is
// passed on as it streams (the whole content at once for a reply that is
// not streamed).
func (c *Client) completeOnce(ctx context.Context, req Request, delta func(agent.Delta)) (*Response, error) { // Complete: images.go
	stream := !c.cfg.DisableStreaming
	bp := bodyPool.Get().(*[]byte)
	segs, body, err := encodeBody(&req, stream, &c.cache, *bp, c.schema)
	if err != nil {
		bodyPool.Put(bp)
		return nil, err
	}
	size := 0
	for _, s := range segs {
		size += len(s)
	}
	var bodies []*requestBody // one per attempt
	defer func() {
		// The transport may close a request body after RoundTrip returned;
		// the buffer is reused only when every attempt's body was closed.
		for _, b := range bodies {
			if !b.closed.Load() {
				return
			}
		}
		if cap(body) <= maxPooledBody {
			*bp = body[:0]
			bodyPool.Put(bp)
		}
	}()
	var onDelta func(string)
	if delta != nil {
		onDelta = func(s string) { delta(agent.Delta{Text: s}) }
	}
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if attempt > 1 && delta != nil {
			delta(agent.Delta{Restart: true})
		}
		rb := &requestBody{segs: segs, size: size}
		bodies = append(bodies, rb)
		res, retryable, partial, err := c.attempt(ctx, rb, onDelta)
		if err == nil {
			res.Timing.Attempts = attempt
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !retryable {
			return nil, err
		}
		if attempt >= c.cfg.MaxAttempts {
			return nil, fmt.Errorf("%w after %d attempt(s): %w", ErrRetriesExhausted, attempt, err)
		}
		wait, ok := retryWait(attempt, err, c.cfg.BaseBackoff, c.cfg.MaxBackoff, rand.Float64())
		if !ok {
			return nil, fmt.Errorf("llm: not retrying: the provider asked to wait %v, more than the %v allowed (%d × MaxBackoff): %w",
				wait, RetryAfterCapFactor*c.cfg.MaxBackoff, RetryAfterCapFactor, err)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return nil, fmt.Errorf("llm: not retrying: the next attempt in %v would start after the context deadline: %w", wait, err)
		}
		if c.cfg.OnRetry != nil {
			c.cfg.OnRetry(Retry{Attempt: attempt, Wait: wait, Err: err, Partial: partial})
		}
		if err := c.sleep(ctx, wait); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
	}
}

// attempt makes one HTTP attempt, passing answer content to onDelta (nil:
// nobody listens). partial reports that onDelta received content before a
// failure.
func (c *Client) attempt(ctx context.Context, body *requestBody, onDelta func(string)) (res *Response, retryable, partial bool, err error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, c.endpoint, body)
	if err != nil {
		return nil, false, false, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	hreq.ContentLength = int64(body.size)
	hreq.GetBody = body.again
	hreq.Header["Content-Type"] = []string{"application/json"}
	if c.cfg.DisableStreaming {
		hreq.Header["Accept"] = []string{"application/json"}
	} else {
		hreq.Header["Accept"] = []string{"text/event-stream"}
	}
	hreq.Header["User-Agent"] = []string{"odek-llm/1"}
	if c.auth != "" {
		hreq.Header["Authorization"] = []string{c.auth}
	}

	start := time.Now()
	reqTimer := time.AfterFunc(c.cfg.RequestTimeout, func() {
		cancel(&RequestTimeoutError{Timeout: c.cfg.RequestTimeout})
	})
	defer reqTimer.Stop()

	resp, err := c.hc.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, false, ctx.Err()
		}
		if cause := context.Cause(actx); isTimeoutCause(cause) {
			return nil, true, false, cause
		}
		return nil, retryableTransportError(err), false, fmt.Errorf("llm: request failed: %w", err)
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, rerr := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBodyBytes))
		if rerr != nil && ctx.Err() != nil {
			return nil, false, false, ctx.Err()
		}
		ra, hasRA := retryAfterFromHeader(resp.Header, time.Now())
		r, apiErr := classify(resp.StatusCode, b, ra, hasRA)
		c.scrubKey(apiErr)
		return nil, r, false, apiErr
	}

	br := &bodyReader{r: resp.Body, limit: MaxResponseBytes}
	var rbody io.Reader = br
	sseBody, err := isEventStream(resp.Header.Get("Content-Type"), &rbody)
	if err != nil {
		retryable, err = c.streamError(ctx, actx, err)
		return nil, retryable, false, err
	}
	if sseBody {
		reqTimer.Stop()
		wd := newWatchdog(c.cfg.IdleTimeout, func() { cancel(&IdleTimeoutError{Idle: c.cfg.IdleTimeout}) })
		defer wd.stop()
		br.wd = wd
		st := getStreamState(rbody, MaxSSELineBytes, onDelta, c.cfg.KeepThinkTags)
		serr := st.readStream()
		if serr == nil {
			serr = st.asm.truncated()
		}
		end := time.Now()
		if serr != nil {
			partial = st.asm.delivered
			putStreamState(st)
			retryable, serr = c.streamError(ctx, actx, serr)
			return nil, retryable, partial, serr
		}
		if st.asm.done {
			drainBody(st.br, cancel)
		}
		st.asm.finishContent()
		res = &Response{
			Message:      st.asm.message(),
			Reasoning:    string(st.asm.reasoning),
			FinishReason: st.asm.finish,
			Model:        st.asm.model,
			Usage:        st.asm.usage,
			Timing:       Timing{Duration: end.Sub(start)},
		}
		if !st.asm.firstDelta.IsZero() {
			res.Timing.TTFT = st.asm.firstDelta.Sub(start)
			res.Timing.Generation = end.Sub(st.asm.firstDelta)
		}
		putStreamState(st)
		return res, false, false, nil
	}

	// A JSON body: asked for, or the server ignored "stream": true.
	data, rerr := io.ReadAll(rbody)
	if rerr != nil {
		retryable, rerr = c.streamError(ctx, actx, rerr)
		return nil, retryable, false, rerr
	}
	res, retryable, err = decodeBody(data, c.cfg.KeepThinkTags)
	if err != nil {
		var apiErr *APIError
		if errors.As(err, &apiErr) {
			c.scrubKey(apiErr)
		}
		return nil, retryable, false, err
	}
	res.Timing.Duration = time.Since(start)
	if onDelta != nil && res.Message.Content != "" {
		onDelta(res.Message.Content)
	}
	return res, false, false, nil
}

// Request bodies are rendered into pooled buffers; maxPooledBody keeps a
// rare huge one from being pinned.
const maxPooledBody = 8 << 20

var bodyPool = sync.Pool{New: func() any { return new([]byte) }}

// requestBody is the body of one attempt: the segments encodeBody made
// (this call's buffer and shared cached encodings), read in order without
// being joined. It records its Close, which the transport may call after
// RoundTrip returned, so that the buffer is reused only once nothing reads
// it any more.
type requestBody struct {
	segs   [][]byte
	size   int // total bytes
	seg    int // current segment
	off    int // offset in it
	closed atomic.Bool
}

func (b *requestBody) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && b.seg < len(b.segs) {
		c := copy(p[n:], b.segs[b.seg][b.off:])
		n += c
		b.off += c
		if b.off == len(b.segs[b.seg]) {
			b.seg, b.off = b.seg+1, 0
		}
	}
	if n == 0 && b.seg >= len(b.segs) {
		return 0, io.EOF
	}
	return n, nil
}

// WriteTo writes the remaining segments to w without an intermediate
// buffer (io.Copy uses it when nothing wraps the body).
func (b *requestBody) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for b.seg < len(b.segs) {
		n, err := w.Write(b.segs[b.seg][b.off:])
		total += int64(n)
		b.off += n
		if err != nil {
			return total, err
		}
		b.seg, b.off = b.seg+1, 0
	}
	return total, nil
}

func (b *requestBody) Close() error {
	b.closed.Store(true)
	return nil
}

// again serves GetBody (redirects, retried HTTP/2 streams): a joined
// copy, so the pooled buffer is never shared with an untracked reader.
func (b *requestBody) again() (io.ReadCloser, error) {
	data := make([]byte, 0, b.size)
	for _, s := range b.segs {
		data = append(data, s...)
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// Draining after [DONE]: the end of the body normally follows at once;
// reading it lets the transport reuse the connection (closing an unread
// HTTP/1.1 body discards the connection, and a new TLS handshake costs far
// more than the drain). A server that keeps the stream open is given up on
// after drainTimeout or drainMaxBytes.
const (
	drainTimeout  = 250 * time.Millisecond
	drainMaxBytes = 16 << 10
)

var errDrained = errors.New("llm: stopped draining the body after [DONE]")

func drainBody(r io.Reader, cancel context.CancelCauseFunc) {
	t := time.AfterFunc(drainTimeout, func() { cancel(errDrained) })
	io.CopyN(io.Discard, r, drainMaxBytes)
	t.Stop()
}

// streamError interprets a failure while reading a 2xx body.
func (c *Client) streamError(ctx, actx context.Context, err error) (retryable bool, _ error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if cause := context.Cause(actx); isTimeoutCause(cause) {
		return true, cause
	}
	var (
		apiErr  *APIError
		lineErr *LineTooLongError
		sizeErr *ResponseTooLargeError
	)
	switch {
	case errors.As(err, &apiErr):
		c.scrubKey(apiErr)
		return classifyRetryable(apiErr), err
	case errors.As(err, &lineErr), errors.As(err, &sizeErr), errors.Is(err, ErrOutputTruncated):
		return false, err
	case errors.Is(err, ErrMalformedResponse), errors.Is(err, ErrStreamInterrupted):
		return true, err
	}
	// A read error from the connection: the stream was cut.
	return true, fmt.Errorf("%w: %w", ErrStreamInterrupted, err)
}

// scrubKey removes the configured API key from a provider message, in
// case the provider echoed it whole (scrubMessage already masks the usual
// shapes).
func (c *Client) scrubKey(e *APIError) {
	if k := c.cfg.APIKey; len(k) >= 4 && strings.Contains(e.Message, k) {
		e.Message = strings.ReplaceAll(e.Message, k, "[redacted]")
	}
}

// classifyRetryable re-derives the retry decision of an APIError built
// from a 200 reply.
func classifyRetryable(e *APIError) bool {
	if e.kind != nil {
		return false
	}
	return classifyInStream(e)
}

func isTimeoutCause(err error) bool {
	var idle *IdleTimeoutError
	var req *RequestTimeoutError
	return errors.As(err, &idle) || errors.As(err, &req)
}

// isEventStream decides whether a 2xx body is an SSE stream: by its media
// type when that is text/event-stream or JSON, else by sniffing the first
// non-blank bytes (servers that omit or mislabel the type), in which case
// *body is replaced by a reader that still yields the sniffed bytes.
func isEventStream(contentType string, body *io.Reader) (bool, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err == nil {
		switch {
		case mt == "text/event-stream":
			return true, nil
		case mt == "application/json" || strings.HasSuffix(mt, "+json"):
			return false, nil
		}
	}
	br := bufio.NewReaderSize(*body, 512)
	*body = br
	// Only the first non-blank byte is needed: '{' or '[' starts JSON; an
	// SSE stream starts with a field name or a ':' comment.
	for n := 1; n <= 512; n++ {
		peek, err := br.Peek(n)
		if len(peek) < n {
			if err == io.EOF {
				return false, nil
			}
			return false, err
		}
		switch peek[n-1] {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[':
			return false, nil
		default:
			return true, nil
		}
	}
	return false, nil
}

// bodyReader bounds a response body and reports activity to the idle
// watchdog.
type bodyReader struct {
	r     io.Reader
	n     int64
	limit int64
	wd    *watchdog
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.n > b.limit {
		return 0, &ResponseTooLargeError{Limit: b.limit, Observed: b.n}
	}
	if rest := b.limit - b.n + 1; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if n > 0 && b.wd != nil {
		b.wd.touch()
	}
	if b.n > b.limit {
		return 0, &ResponseTooLargeError{Limit: b.limit, Observed: b.n}
	}
	return n, err
}

// watchdog calls fire once no touch happened for idle. It re-arms itself
// lazily instead of resetting a timer on every read.
type watchdog struct {
	stopped atomic.Bool
	idle    time.Duration
	start   time.Time
	last    atomic.Int64 // nanoseconds since start of the last touch
	timer   *time.Timer
	fire    func()
}

func newWatchdog(idle time.Duration, fire func()) *watchdog {
	w := &watchdog{idle: idle, start: time.Now(), fire: fire}
	w.timer = time.AfterFunc(idle, w.check)
	return w
}

func (w *watchdog) touch() { w.last.Store(int64(time.Since(w.start))) }

func (w *watchdog) check() {
	if w.stopped.Load() {
		return
	}
	silent := time.Since(w.start) - time.Duration(w.last.Load())
	if silent >= w.idle {
		w.fire()
		return
	}
	w.timer.Reset(w.idle - silent)
}

func (w *watchdog) stop() {
	w.stopped.Store(true)
	w.timer.Stop()
}
