package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/odekrun/odek/queue"
)

// Read-only inspection through the admin socket: while odek-bot holds the
// store, `odek queue stats|show|dead --store PATH` ask it over the same
// 0600 unix socket the hot backup uses (GET /stats, /inspect?id=,
// /dead?max=), and the answers are the values the store's own methods
// return, as JSON. The commands that change the queue go through the
// same socket too (adminwrite.go).

// adminRoutes adds the inspection endpoints to mux.
func (s *Store) adminRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		st, err := s.Stats(r.Context())
		writeAdmin(w, st, err)
	})
	mux.HandleFunc("GET /inspect", func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		if id == "" || len(id) > queue.MaxIDLen {
			http.Error(w, fmt.Sprintf("id: want a job id of 1..%d bytes", queue.MaxIDLen), http.StatusBadRequest)
			return
		}
		info, ok, err := s.Inspect(r.Context(), id)
		writeAdmin(w, inspectReply{Info: info, OK: ok}, err)
	})
	mux.HandleFunc("GET /dead", func(w http.ResponseWriter, r *http.Request) {
		max, err := strconv.ParseInt(r.URL.Query().Get("max"), 10, 64)
		if err != nil {
			http.Error(w, "max: want an integer (0: all)", http.StatusBadRequest)
			return
		}
		ds, err := s.DeadEntries(r.Context(), max)
		writeAdmin(w, ds, err)
	})
}

type inspectReply struct {
	Info queue.JobInfo `json:"info"`
	OK   bool          `json:"ok"`
}

func writeAdmin(w http.ResponseWriter, v any, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Admin is a client of a running store's admin socket: the read-only
// inspection methods of the store, answered by the process that holds it.
type Admin struct {
	sock string
	hc   *http.Client
}

// DialAdmin returns a client of the admin socket of the store at
// storePath. It connects on each call; Ping checks that something answers.
func DialAdmin(storePath string) *Admin {
	sock := SocketPath(storePath)
	return &Admin{sock: sock, hc: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}}
}

// Socket is the socket's path.
func (a *Admin) Socket() string { return a.sock }

// Close releases idle connections.
func (a *Admin) Close() { a.hc.CloseIdleConnections() }

// maxAdminReply bounds one answer read from the socket (the dead letters
// are the largest: DeadMaxLen of them).
const maxAdminReply = 256 << 20

func (a *Admin) get(ctx context.Context, path string, q url.Values, out any) error {
	u := "http://store" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return fmt.Errorf("admin socket %s: %w", a.sock, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		if resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("admin socket %s: %s is not served (an odek-bot older than this odek?)", a.sock, path)
		}
		return fmt.Errorf("admin socket %s: %s: %s", a.sock, resp.Status, msg)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAdminReply)).Decode(out); err != nil {
		return fmt.Errorf("admin socket %s: reply to %s: %w", a.sock, path, err)
	}
	return nil
}

// Stats is the running store's queue.Operator Stats.
func (a *Admin) Stats(ctx context.Context) (queue.Stats, error) {
	var st queue.Stats
	err := a.get(ctx, "/stats", nil, &st)
	return st, err
}

// Inspect is the running store's queue.Inspector Inspect.
func (a *Admin) Inspect(ctx context.Context, jobID string) (queue.JobInfo, bool, error) {
	var r inspectReply
	err := a.get(ctx, "/inspect", url.Values{"id": {jobID}}, &r)
	return r.Info, r.OK, err
}

// DeadEntries is the running store's queue.Inspector DeadEntries.
func (a *Admin) DeadEntries(ctx context.Context, max int64) ([]queue.DeadLetter, error) {
	var ds []queue.DeadLetter
	err := a.get(ctx, "/dead", url.Values{"max": {strconv.FormatInt(max, 10)}}, &ds)
	return ds, err
}

// Ping reports whether the socket answers (GET /stats).
func (a *Admin) Ping(ctx context.Context) error {
	_, err := a.Stats(ctx)
	return err
}
