package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/session"
)

// cmdSession implements `odek session list|show ID|delete ID`.
func cmdSession(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageErr("odek session needs a subcommand: list, show ID, delete ID, trim [--keep N] ID")
	}
	home, err := config.HomeDir(nil)
	if err != nil {
		return withCode(exitSetup, err)
	}
	store := &session.FileStore{Dir: filepath.Join(home, "sessions")}
	switch args[0] {
	case "list":
		sums, err := store.List(ctx)
		if err != nil {
			return err
		}
		if len(sums) == 0 {
			fmt.Fprintln(stdout, "no sessions")
			return nil
		}
		for _, s := range sums {
			fmt.Fprintf(stdout, "%s  %s  %3d messages  %s\n", s.ID, s.UpdatedAt.Local().Format(time.DateTime), s.MessageCount, s.Goal)
		}
		return nil
	case "trim":
		fs := flag.NewFlagSet("odek session trim", flag.ContinueOnError)
		keep := fs.Int("keep", 10, "message groups to keep after the first goal")
		if err := fs.Parse(args[1:]); err != nil {
			return withCode(exitSetup, err)
		}
		if fs.NArg() != 1 || *keep < 0 {
			return usageErr("usage: odek session trim [--keep N] ID")
		}
		id := fs.Arg(0)
		if err := session.ValidateID(id); err != nil {
			return withCode(exitSetup, err)
		}
		s, err := store.Load(ctx, id)
		if err != nil {
			return err
		}
		before := len(s.Messages)
		var dropped int
		s.Messages, dropped = agent.KeepRecent(s.Messages, *keep)
		if dropped == 0 {
			fmt.Fprintf(stdout, "%s: nothing to trim (%d messages)\n", id, before)
			return nil
		}
		if err := store.Save(ctx, s); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: dropped %d message groups, %d → %d messages\n", id, dropped, before, len(s.Messages))
		return nil
	case "show", "delete":
		if len(args) != 2 {
			return usageErr("odek session %s needs exactly one session id", args[0])
		}
		if err := session.ValidateID(args[1]); err != nil {
			return withCode(exitSetup, err)
		}
		if args[0] == "delete" {
			if err := store.Delete(ctx, args[1]); err != nil {
				return err
			}
			fmt.Fprintln(stdout, "deleted", args[1])
			return nil
		}
		s, err := store.Load(ctx, args[1])
		if err != nil {
			return err
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(s)
	default:
		return usageErr("unknown session subcommand %q (list, show, delete, trim)", args[0])
	}
}
