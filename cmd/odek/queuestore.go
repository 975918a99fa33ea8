package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/odekrun/odek/queue"
	estore "github.com/odekrun/odek/queue/embedded"
)

// readQueue is what the read-only subcommands (stats, show, dead) use of
// a queue: a connected queue, or a running odek-bot's admin socket.
type readQueue interface {
	Stats(ctx context.Context) (queue.Stats, error)
	Inspect(ctx context.Context, jobID string) (queue.JobInfo, bool, error)
	DeadEntries(ctx context.Context, max int64) ([]queue.DeadLetter, error)
}

// writeQueue is what submit (without --wait), cancel, retry and
// purge-dead use to change a queue: a connected queue, or a running
// odek-bot's admin socket, where the bot applies the change with its own
// queue (queue/embedded/adminwrite.go).
type writeQueue interface {
	Enqueue(ctx context.Context, job queue.Job) (queue.Job, bool, error)
	Cancel(ctx context.Context, jobID string) error
	Retry(ctx context.Context, jobID string) (queue.Job, error)
	PurgeDead(ctx context.Context, olderThan time.Duration) (int64, error)
}

// socketSub reports the subcommands that work on a store held by a
// running odek-bot, through its admin socket: the read-only ones and the
// ones that change the queue. (backup has its own path; workers, tail and
// config do not apply.) A switch, not a package-level map, which would be
// built at the start of every odek process.
func socketSub(sub string) bool {
	switch sub {
	case "stats", "show", "dead", "submit", "cancel", "retry", "purge-dead":
		return true
	}
	return false
}

// reader is the queue the read-only subcommands ask.
func (c *queueCLI) reader() readQueue {
	if c.admin != nil {
		return c.admin
	}
	return c.q
}

// writer is the queue the subcommands that change it use.
func (c *queueCLI) writer() writeQueue {
	if c.admin != nil {
		return c.admin
	}
	return c.q
}

// openStoreCLI opens the embedded store at path for subcommand sub. When
// a running odek-bot holds it, the CLI asks the bot through the store's
// admin socket (0600, the hot backup's) instead, for reading and for
// changing the queue alike; when neither works the error says both why
// the store is busy and why the socket did not answer. close releases
// what was opened.
func openStoreCLI(ctx context.Context, sub, path string, base queueCLI) (c *queueCLI, close func(), err error) {
	st, err := estore.Open(path, queue.Options{})
	if err == nil {
		base.q = st
		return &base, func() { st.Close() }, nil
	}
	if !errors.Is(err, estore.ErrLocked) {
		return nil, nil, withCode(exitUnavailable, fmt.Errorf("odek queue %s: %w", sub, err))
	}
	if !socketSub(sub) {
		return nil, nil, withCode(exitUnavailable, fmt.Errorf("odek queue %s: %w", sub, err))
	}
	a := estore.DialAdmin(path)
	if perr := a.Ping(ctx); perr != nil {
		a.Close()
		return nil, nil, withCode(exitUnavailable, fmt.Errorf("odek queue %s: %w; and the holder's admin socket does not answer: %v", sub, err, perr))
	}
	base.admin = a
	base.addr = a.Socket()
	return &base, a.Close, nil
}

var (
	_ readQueue  = (*estore.Admin)(nil)
	_ writeQueue = (*estore.Admin)(nil)
)

// adminErr is fail's error for a request through a running odek-bot's
// admin socket: exit 69 when the socket could not be reached, 3 when the
// bot refused the request as malformed, else 1; the message names the
// socket and says the bot's own words.
func adminErr(what, sock string, err error) error {
	var re *estore.RemoteError
	switch {
	case errors.As(err, &re) && re.BadRequest():
		return withCode(exitSetup, fmt.Errorf("%s: odek-bot at %s refused the request: %w", what, sock, err))
	case errors.As(err, &re):
		return withCode(exitError, fmt.Errorf("%s: odek-bot at %s: %w", what, sock, err))
	case queue.Unreachable(err):
		return withCode(exitUnavailable, fmt.Errorf("%s: %w (is odek-bot still running?)", what, err))
	}
	return withCode(exitError, fmt.Errorf("%s: %w", what, err))
}
