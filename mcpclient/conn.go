package mcpclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// reply is what a pending request receives: a result, a JSON-RPC error, or
// the connection's terminal error.
type reply struct {
	result json.RawMessage
	rpcErr *wireError
	err    error
}

// errConnDead: the connection had closed before the request was sent.
// Nothing reached the server, so the caller may get a live connection
// (restarting the server) and send it there.
var errConnDead = errors.New("mcpclient: connection closed before the request was sent")

// waiter is one in-flight request's rendezvous: the channel the reader
// answers on and the request's timer, pooled together so the hot path
// allocates neither.
type waiter struct {
	ch    chan reply
	timer *time.Timer
}

var waiterPool = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &waiter{ch: make(chan reply, 1), timer: t}
}}

// transport is one live connection to a server: a child process over
// stdio (conn) or a remote endpoint over Streamable HTTP (httpConn).
type transport interface {
	// request sends method and waits for the answer (see conn.request).
	request(ctx context.Context, method string, params []byte, timeout time.Duration, tool string) (json.RawMessage, *wireError, error)
	notify(method string, params []byte) error
	alive() bool
	terminal() (time.Time, error)
	shutdown(ctx context.Context, cause error) error
	// negotiated records the protocol version of initialize's answer.
	negotiated(version string)
}

// conn is one live connection to one server process. It is safe for
// concurrent use. One reader goroutine owns stdout; writes are serialised
// by wmu on one bufio.Writer.
type conn struct {
	server string
	log    logrus.FieldLogger
	proc   *process
	grace  time.Duration
	// timeout bounds writes that belong to no request (notifications,
	// answers to server requests).
	timeout time.Duration

	wmu  sync.Mutex
	w    *bufio.Writer
	wbuf []byte // request scratch, guarded by wmu

	nextID atomic.Uint64

	mu      sync.Mutex
	pending map[uint64]chan reply
	err     error     // terminal error, set once
	deadAt  time.Time // when err was set
	done    chan struct{}

	h       serverHandler
	replies chan srvRequest // server→client requests to answer
	stats   connStats
	wg      sync.WaitGroup // reader, stderr drain, replier
}

// connStats count what the reader skipped or dropped; read with atomic
// loads, for tests and ext check.
type connStats struct {
	invalid       atomic.Int64 // unparseable lines
	notifications atomic.Int64
	requests      atomic.Int64 // server→client requests answered
	dropped       atomic.Int64 // responses with a missing/unknown id
	stderrLines   atomic.Int64
}

// serverHandler answers what the server sends that is not a response:
// requests (answer builds the whole response line, called off the reader
// goroutine) and notifications (called on the reader goroutine; it must
// not block, and params is valid only during the call).
type serverHandler interface {
	answer(b, rawID []byte, method string, params []byte) []byte
	notified(method string, params []byte)
}

// srvRequest is one server→client request waiting for its answer; id and
// params are copies.
type srvRequest struct {
	id     []byte
	method string
	params []byte
}

func newConn(server string, log logrus.FieldLogger, p *process, limit int64, grace, timeout time.Duration, h serverHandler) *conn {
	c := &conn{
		server:  server,
		log:     log,
		proc:    p,
		grace:   grace,
		timeout: timeout,
		w:       bufio.NewWriterSize(p.stdin, 32<<10),
		pending: make(map[uint64]chan reply, 64),
		done:    make(chan struct{}),
		replies: make(chan srvRequest, 16),
		h:       h,
	}
	c.wg.Add(3)
	go c.readLoop(newLineReader(p.stdout, limit))
	go c.drainStderr(p.stderr)
	go c.replyLoop()
	return c
}

func (c *conn) negotiated(string) {}

// alive reports whether the connection is usable.
func (c *conn) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// terminal returns the error that closed the connection and when.
func (c *conn) terminal() (time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadAt, c.err
}

// fail closes the connection with err (first error wins): every pending
// request gets err, the process is stopped in the background.
func (c *conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err, c.deadAt = err, time.Now()
	// done closes before any pending request learns of the failure, so a
	// caller that saw the error never finds the connection alive.
	close(c.done)
	for id, ch := range c.pending {
		ch <- reply{err: err}
		delete(c.pending, id)
	}
	c.mu.Unlock()
	go c.proc.stop(context.Background(), c.grace)
}

// shutdown closes the connection on purpose and waits for the process and
// the goroutines.
func (c *conn) shutdown(ctx context.Context, cause error) error {
	c.fail(cause)
	err := c.proc.stop(ctx, c.grace)
	c.wg.Wait()
	return err
}

func (c *conn) readLoop(lr *lineReader) {
	defer c.wg.Done()
	defer close(c.replies)
	for {
		line, err := lr.next()
		if err != nil {
			c.fail(c.readError(err, lr.limit))
			return
		}
		if c.dispatch(line) && lr.buffered() == 0 {
			// A caller was woken and the next read would block this
			// goroutine's thread in read(2) (pipe_linux.go) while the
			// caller waits in this P's run queue for another thread to
			// steal it. Let it run here first.
			runtime.Gosched()
		}
	}
}

// readError turns a read failure into the connection's terminal error.
func (c *conn) readError(err error, limit int64) error {
	var tl *lineTooLong
	switch {
	case errors.As(err, &tl):
		c.log.WithField("limit", limit).Error("response line exceeds max_response_bytes; closing the connection")
		return &LineTooLongError{Server: c.server, Limit: limit, Observed: tl.observed}
	case errors.Is(err, os.ErrClosed):
		return fmt.Errorf("%w: server %q: closed by odek", ErrConnClosed, c.server)
	}
	what := "server closed its stdout"
	if errors.Is(err, errPartialLine) {
		what = "server closed its stdout in the middle of a line (the partial message was discarded)"
	} else if err != io.EOF {
		what = "reading the server's stdout failed: " + err.Error()
	}
	// Name the exit status when the process is gone already (it usually
	// is when stdout ends); wait briefly for it.
	select {
	case <-c.proc.exited:
	case <-time.After(200 * time.Millisecond):
	}
	if st := c.proc.exitStatus(); st != "" {
		what += " (" + st + ")"
	}
	return fmt.Errorf("%w: server %q: %s", ErrConnClosed, c.server, what)
}

// dispatch routes one line and reports whether it answered a pending
// request. It runs on the reader goroutine and must not block on the
// server.
func (c *conn) dispatch(line []byte) bool {
	msg, kind, id := decodeLine(line)
	switch kind {
	case kindResponse:
		c.mu.Lock()
		ch, ok := c.pending[id]
		if ok {
			delete(c.pending, id)
		}
		c.mu.Unlock()
		if !ok {
			// Unknown, already answered (result and error for one id:
			// the first won) or timed out.
			c.stats.dropped.Add(1)
			c.log.WithField("id", id).Debug("dropped a response with an unknown id")
			return false
		}
		r := reply{result: msg.Result, rpcErr: msg.Error}
		if msg.Result == nil && msg.Error == nil {
			r.err = fmt.Errorf("%w: server %q: response %d has neither result nor error", ErrProtocol, c.server, id)
		}
		ch <- r
		return true
	case kindRequest:
		c.stats.requests.Add(1)
		if len(msg.ID) > 256 {
			c.log.Warn("server→client request with an oversized id ignored")
			return false
		}
		req := srvRequest{id: append([]byte(nil), msg.ID...), method: msg.Method}
		if len(msg.Params) <= maxServerRequestParams {
			req.params = append([]byte(nil), msg.Params...)
		}
		select {
		case c.replies <- req:
		default:
			c.log.Warn("server→client request flood: answer dropped")
		}
	case kindNotification:
		c.stats.notifications.Add(1)
		c.h.notified(msg.Method, msg.Params)
	case kindBadID:
		c.stats.dropped.Add(1)
		c.log.Debug("dropped a response without a usable id")
	default:
		if n := c.stats.invalid.Add(1); n <= 10 || n%1000 == 0 {
			c.log.WithFields(logrus.Fields{"bytes": len(line), "count": n}).Warn("skipped a stdout line that is not JSON-RPC")
		}
	}
	return false
}

// replyLoop writes answers to server→client requests off the reader
// goroutine, so a server that does not read its stdin cannot stall stdout.
func (c *conn) replyLoop() {
	defer c.wg.Done()
	for req := range c.replies {
		if c.write(c.timeout, func(buf []byte) []byte { return c.h.answer(buf, req.id, req.method, req.params) }) != nil {
			for range c.replies {
			}
			return
		}
	}
}

// write sends one message line built by build into the scratch buffer. A
// server that does not read its stdin cannot block the caller past
// timeout: the write then fails and the connection is closed (a partial
// line may have been written).
func (c *conn) write(timeout time.Duration, build func([]byte) []byte) error {
	c.wmu.Lock()
	_ = c.proc.stdin.SetWriteDeadline(time.Now().Add(timeout))
	c.wbuf = build(c.wbuf[:0])
	return c.flushLocked()
}

// flushLocked writes c.wbuf and flushes; it is called with wmu held and
// releases it.
func (c *conn) flushLocked() error {
	_, err := c.w.Write(c.wbuf)
	if err == nil {
		err = c.w.Flush()
	}
	if cap(c.wbuf) > 1<<20 {
		c.wbuf = nil
	}
	c.wmu.Unlock()
	if err != nil {
		err = fmt.Errorf("%w: server %q: writing to its stdin failed: %v", ErrConnClosed, c.server, err)
		c.fail(err)
		return err
	}
	return nil
}

// writeRequest is write for a request line, without a closure so the hot
// path does not allocate.
func (c *conn) writeRequest(timeout time.Duration, id uint64, method string, params []byte) error {
	c.wmu.Lock()
	_ = c.proc.stdin.SetWriteDeadline(time.Now().Add(timeout))
	c.wbuf = appendRequest(c.wbuf[:0], id, method, params)
	return c.flushLocked()
}

// notify sends a notification; errors close the connection and are
// returned.
func (c *conn) notify(method string, params []byte) error {
	return c.write(c.timeout, func(b []byte) []byte { return appendNotification(b, method, params) })
}

// request sends method with params and waits for the answer, the timeout
// or ctx. On timeout or cancellation it sends notifications/cancelled and
// forgets the request (a late answer is dropped); the connection stays up.
// A JSON-RPC error answer is returned as rpcErr with a nil error.
func (c *conn) request(ctx context.Context, method string, params []byte, timeout time.Duration, tool string) (json.RawMessage, *wireError, error) {
	w := waiterPool.Get().(*waiter)
	defer waiterPool.Put(w) // ch is empty and timer stopped on every return path
	ch := w.ch
	id := c.nextID.Add(1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, nil, errConnDead
	}
	c.pending[id] = ch
	c.mu.Unlock()

	if err := c.writeRequest(timeout, id, method, params); err != nil {
		// fail() answered every pending request, ours included.
		r := <-ch
		return nil, nil, r.err
	}
	w.timer.Reset(timeout)
	select {
	case r := <-ch:
		w.timer.Stop()
		return r.result, r.rpcErr, r.err
	case <-w.timer.C:
		if r, ok := c.abandon(id, ch, "timeout"); ok {
			return r.result, r.rpcErr, r.err
		}
		return nil, nil, &TimeoutError{Server: c.server, Tool: tool, Method: method, Limit: timeout}
	case <-ctx.Done():
		w.timer.Stop()
		if r, ok := c.abandon(id, ch, "cancelled by the client"); ok {
			return r.result, r.rpcErr, r.err
		}
		return nil, nil, ctx.Err()
	}
}

// abandon forgets request id and tells the server. If the answer won the
// race (it is already in ch), it is returned instead with ok.
func (c *conn) abandon(id uint64, ch chan reply, reason string) (reply, bool) {
	c.mu.Lock()
	_, pending := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if !pending {
		return <-ch, true
	}
	if c.alive() {
		_ = c.notify("notifications/cancelled", cancelledParams(id, reason))
	}
	return reply{}, false
}
