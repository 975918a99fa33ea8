package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/session"
)

// cmdSession implements `odek session list|show ID|delete ID`.
func cmdSession(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageErr("odek session needs a subcommand: list, show ID, delete ID")
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
		return usageErr("unknown session subcommand %q (list, show, delete)", args[0])
	}
}
