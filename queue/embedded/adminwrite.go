package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/odekrun/odek/queue"
)

// Changing the queue through the admin socket: while odek-bot holds the
// store, `odek queue submit|cancel|retry|purge-dead --store PATH` send
// their request to it (POST /submit, /cancel, /retry, /purge-dead) and
// the bot applies it with its own queue object — the same Enqueue,
// Cancel, Retry and PurgeDead as every other write, journaled and durable
// before the answer, and seen by the bot's workers at once. The bot
// validates the request as the store itself does: a refused job gets the
// store's own error text, with its kind, so the CLI reports it as it
// would without the bot.
//
// The socket is 0600 and owned by the bot's user: whoever can open it can
// change the queue, as whoever can open the store file could. Still, the
// request is input from another process and is parsed as such: at most
// MaxAdminRequest bytes, one JSON object with no unknown field and nothing
// after it, each field checked, and errors that name the field or limit.

// MaxAdminRequest bounds one request body (a job, whose own encoded size
// the store limits to its MaxPayloadBytes, 256 KiB by default).
const MaxAdminRequest = 1 << 20

// Error kinds of a refused admin request (adminError.Kind); the client
// maps them back to the queue's sentinel errors.
const (
	kindBadRequest = "bad_request"   // malformed request: nothing was done
	kindInvalidJob = "invalid_job"   // queue.ErrInvalidJob
	kindTooLarge   = "too_large"     // queue.ErrPayloadTooLarge, or the body over MaxAdminRequest
	kindNotFound   = "not_found"     // queue.ErrNotFound
	kindInternal   = "store_failure" // anything else
)

// adminError is the body of a refused request.
type adminError struct {
	Error string `json:"error"`
	Kind  string `json:"kind"`
}

// idRequest is the body of POST /cancel and /retry.
type idRequest struct {
	ID string `json:"id"`
}

// purgeRequest is the body of POST /purge-dead.
type purgeRequest struct {
	// OlderThanNS: dead letters older than this many nanoseconds go (0: all).
	OlderThanNS *int64 `json:"older_than_ns"`
}

type submitReply struct {
	Job       queue.Job `json:"job"`
	Duplicate bool      `json:"duplicate"`
}

type retryReply struct {
	Job queue.Job `json:"job"`
}

type purgeReply struct {
	Purged int64 `json:"purged"`
}

// requestError is a malformed request, refused before the store is asked.
type requestError struct{ msg string }

func (e *requestError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &requestError{msg: fmt.Sprintf(format, args...)}
}

// decodeStrict decodes body, the request of op, into v: exactly one JSON
// object, no unknown field, nothing after it.
func decodeStrict(op string, body []byte, v any) error {
	if len(body) > MaxAdminRequest {
		return badRequest("%s request: body of %d bytes is over the limit of %d", op, len(body), MaxAdminRequest)
	}
	t := bytes.TrimLeft(body, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return badRequest("%s request: want one JSON object", op)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("%s request: %v", op, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("%s request: data after the JSON object", op)
	}
	return nil
}

// decodeSubmit is the request of POST /submit: a job as queue.Job encodes
// it. Its content is the store's to check (Enqueue), as on the direct path.
func decodeSubmit(body []byte) (queue.Job, error) {
	var j queue.Job
	err := decodeStrict("submit", body, &j)
	return j, err
}

// decodeID is the request of POST /cancel and /retry.
func decodeID(op string, body []byte) (string, error) {
	var r idRequest
	if err := decodeStrict(op, body, &r); err != nil {
		return "", err
	}
	if r.ID == "" || len(r.ID) > queue.MaxIDLen {
		return "", badRequest("%s request: id: want a job id of 1..%d bytes, got %d", op, queue.MaxIDLen, len(r.ID))
	}
	return r.ID, nil
}

// decodePurge is the request of POST /purge-dead.
func decodePurge(body []byte) (time.Duration, error) {
	var r purgeRequest
	if err := decodeStrict("purge-dead", body, &r); err != nil {
		return 0, err
	}
	if r.OlderThanNS == nil {
		return 0, badRequest("purge-dead request: older_than_ns is missing (0 purges every dead letter)")
	}
	if *r.OlderThanNS < 0 {
		return 0, badRequest("purge-dead request: older_than_ns: want ≥ 0, got %d", *r.OlderThanNS)
	}
	return time.Duration(*r.OlderThanNS), nil
}

// adminWriteRoutes adds the endpoints that change the queue to mux, and
// the schedule counts of `odek queue stats`.
func (s *Store) adminWriteRoutes(mux *http.ServeMux) {
	post(mux, "submit", func(ctx context.Context, body []byte) (any, error) {
		j, err := decodeSubmit(body)
		if err != nil {
			return nil, err
		}
		stored, dup, err := s.Enqueue(ctx, j)
		return submitReply{Job: stored, Duplicate: dup}, err
	})
	post(mux, "cancel", func(ctx context.Context, body []byte) (any, error) {
		id, err := decodeID("cancel", body)
		if err != nil {
			return nil, err
		}
		return struct{}{}, s.Cancel(ctx, id)
	})
	post(mux, "retry", func(ctx context.Context, body []byte) (any, error) {
		id, err := decodeID("retry", body)
		if err != nil {
			return nil, err
		}
		j, err := s.Retry(ctx, id)
		return retryReply{Job: j}, err
	})
	post(mux, "purge-dead", func(ctx context.Context, body []byte) (any, error) {
		d, err := decodePurge(body)
		if err != nil {
			return nil, err
		}
		n, err := s.PurgeDead(ctx, d)
		return purgeReply{Purged: n}, err
	})
	// The schedules' durable state, read fresh from the database: the
	// bot's schedule store writes it through before each change returns.
	mux.HandleFunc("GET /schedule-counts", func(w http.ResponseWriter, r *http.Request) {
		count, _ := s.scheduleCounts.Load().(func(context.Context) (any, error))
		if count == nil {
			writeAdmin(w, nil, errors.New("embedded: this process keeps no schedules in the store"))
			return
		}
		n, err := count(r.Context())
		writeAdmin(w, n, err)
	})
}

// post serves POST /op: the body, bounded, to do; its answer as JSON, or
// a refusal as an adminError.
func post(mux *http.ServeMux, op string, do func(ctx context.Context, body []byte) (any, error)) {
	mux.HandleFunc("POST /"+op, func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxAdminRequest))
		if err != nil {
			var mb *http.MaxBytesError
			if errors.As(err, &mb) {
				refuse(w, http.StatusRequestEntityTooLarge, kindTooLarge, fmt.Sprintf("%s request: body over the limit of %d bytes", op, MaxAdminRequest))
				return
			}
			refuse(w, http.StatusBadRequest, kindBadRequest, fmt.Sprintf("%s request: %v", op, err))
			return
		}
		v, err := do(r.Context(), body)
		var re *requestError
		switch {
		case err == nil:
			writeAdmin(w, v, nil)
		case errors.As(err, &re):
			refuse(w, http.StatusBadRequest, kindBadRequest, re.msg)
		case errors.Is(err, queue.ErrInvalidJob):
			refuse(w, http.StatusUnprocessableEntity, kindInvalidJob, err.Error())
		case errors.Is(err, queue.ErrPayloadTooLarge):
			refuse(w, http.StatusUnprocessableEntity, kindTooLarge, err.Error())
		case errors.Is(err, queue.ErrNotFound):
			refuse(w, http.StatusUnprocessableEntity, kindNotFound, err.Error())
		default:
			refuse(w, http.StatusInternalServerError, kindInternal, err.Error())
		}
	})
}

func refuse(w http.ResponseWriter, code int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(adminError{Error: msg, Kind: kind})
}

// RemoteError is a request the store holder refused: its message is the
// holder's, and errors.Is matches the queue's sentinel of its kind
// (queue.ErrInvalidJob, ErrPayloadTooLarge, ErrNotFound) — so a caller
// treats it as it would the store's own error.
type RemoteError struct {
	Msg  string
	Kind string
}

func (e *RemoteError) Error() string { return e.Msg }

// Unwrap is the queue sentinel of the error's kind, if any.
func (e *RemoteError) Unwrap() error {
	switch e.Kind {
	case kindInvalidJob:
		return queue.ErrInvalidJob
	case kindTooLarge:
		return queue.ErrPayloadTooLarge
	case kindNotFound:
		return queue.ErrNotFound
	}
	return nil
}

// BadRequest reports whether the holder refused the request as malformed
// (nothing was done).
func (e *RemoteError) BadRequest() bool { return e.Kind == kindBadRequest }

func (a *Admin) post(ctx context.Context, op string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://store/"+op, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.hc.Do(req)
	if err != nil {
		return fmt.Errorf("admin socket %s: %w", a.sock, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed:
		return fmt.Errorf("admin socket %s: /%s is not served (an odek-bot older than this odek?)", a.sock, op)
	default:
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var ae adminError
		if json.Unmarshal(raw, &ae) == nil && ae.Error != "" {
			return &RemoteError{Msg: ae.Error, Kind: ae.Kind}
		}
		return fmt.Errorf("admin socket %s: %s: %s", a.sock, resp.Status, bytes.TrimSpace(raw))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAdminReply)).Decode(out); err != nil {
		return fmt.Errorf("admin socket %s: reply to /%s: %w", a.sock, op, err)
	}
	return nil
}

// Enqueue is the running store's queue.Queue Enqueue.
func (a *Admin) Enqueue(ctx context.Context, j queue.Job) (queue.Job, bool, error) {
	var r submitReply
	if err := a.post(ctx, "submit", j, &r); err != nil {
		return queue.Job{}, false, err
	}
	return r.Job, r.Duplicate, nil
}

// Cancel is the running store's queue.Queue Cancel.
func (a *Admin) Cancel(ctx context.Context, id string) error {
	return a.post(ctx, "cancel", idRequest{ID: id}, &struct{}{})
}

// Retry is the running store's queue.Operator Retry.
func (a *Admin) Retry(ctx context.Context, id string) (queue.Job, error) {
	var r retryReply
	err := a.post(ctx, "retry", idRequest{ID: id}, &r)
	return r.Job, err
}

// PurgeDead is the running store's queue.Operator PurgeDead.
func (a *Admin) PurgeDead(ctx context.Context, olderThan time.Duration) (int64, error) {
	ns := int64(olderThan)
	var r purgeReply
	err := a.post(ctx, "purge-dead", purgeRequest{OlderThanNS: &ns}, &r)
	return r.Purged, err
}

// ScheduleCounts decodes into out the counts of the schedules the
// running store holds, as the holder's counter (ServeScheduleCounts)
// reported them.
func (a *Admin) ScheduleCounts(ctx context.Context, out any) error {
	return a.get(ctx, "/schedule-counts", nil, out)
}

// ServeScheduleCounts sets what the admin socket's schedule counts ask:
// the process that keeps its schedules in this store (the bot) passes
// their counter. The schedule package is not imported here: its own
// tests use this store.
func (s *Store) ServeScheduleCounts(count func(context.Context) (any, error)) {
	s.scheduleCounts.Store(count)
}
