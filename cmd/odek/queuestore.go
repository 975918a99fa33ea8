package main

import (
	"context"
	"errors"
	"fmt"

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

// readOnlySubs read the queue and change nothing: with --store they also
// work while odek-bot holds the store, through its admin socket.
var readOnlySubs = map[string]bool{"stats": true, "show": true, "dead": true}

// reader is the queue the read-only subcommands ask.
func (c *queueCLI) reader() readQueue {
	if c.ro != nil {
		return c.ro
	}
	return c.q
}

// openStoreCLI opens the embedded store at path for subcommand sub. When
// a running odek-bot holds it and sub only reads, the CLI asks the bot
// through the store's admin socket (0600, the hot backup's) instead; when
// neither works the error says both why the store is busy and why the
// socket did not answer. close releases what was opened.
func openStoreCLI(ctx context.Context, sub, path string, base queueCLI) (c *queueCLI, close func(), err error) {
	st, err := estore.Open(path, queue.Options{})
	if err == nil {
		base.q = st
		return &base, func() { st.Close() }, nil
	}
	if !errors.Is(err, estore.ErrLocked) {
		return nil, nil, withCode(exitUnavailable, fmt.Errorf("odek queue %s: %w", sub, err))
	}
	if !readOnlySubs[sub] {
		return nil, nil, withCode(exitUnavailable, fmt.Errorf("odek queue %s: %w (while it runs only stats, show, dead and backup work, through its admin socket)", sub, err))
	}
	a := estore.DialAdmin(path)
	if perr := a.Ping(ctx); perr != nil {
		a.Close()
		return nil, nil, withCode(exitUnavailable, fmt.Errorf("odek queue %s: %w; and the holder's admin socket does not answer: %v", sub, err, perr))
	}
	base.ro = a
	base.addr = a.Socket()
	return &base, a.Close, nil
}

var _ readQueue = (*estore.Admin)(nil)
