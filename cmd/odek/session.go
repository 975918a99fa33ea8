package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/host"
	"github.com/odekrun/odek/internal/session"
)

// cmdSession implements `odek session list|show ID|delete ID`.
func cmdSession(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageErr("odek session needs a subcommand: list, show ID, delete ID, trim [--keep N] ID, compact [--id ID] [--keep N]")
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
	case "compact":
		fs := flag.NewFlagSet("odek session compact", flag.ContinueOnError)
		id := fs.String("id", "", "the session to compact (default: the most recent)")
		keep := fs.Int("keep", 2, "newest message groups kept verbatim")
		if err := fs.Parse(args[1:]); err != nil {
			return withCode(exitSetup, err)
		}
		if fs.NArg() != 0 || *keep < 1 {
			return usageErr("usage: odek session compact [--id ID] [--keep N] (N >= 1)")
		}
		return compactSession(ctx, store, *id, *keep, stdout)
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

// compactSession folds the oldest turns of a stored session into its
// digest with one side call to the configured model (agent.Compact) and
// saves it: what a chat's /compact does.
func compactSession(ctx context.Context, store session.Store, id string, keep int, stdout io.Writer) error {
	var s *session.Session
	var err error
	if id != "" {
		if err := session.ValidateID(id); err != nil {
			return withCode(exitSetup, err)
		}
		s, err = store.Load(ctx, id)
	} else {
		s, err = store.Latest(ctx)
	}
	if err != nil {
		return err
	}
	cfg, _, err := config.Load(config.Options{})
	if err != nil {
		return withCode(exitSetup, err)
	}
	model := cfg.Model
	if s.Model != "" {
		model = s.Model
	}
	client, err := host.NewLLM(cfg)
	if err != nil {
		return withCode(exitSetup, err)
	}
	msgs, c, err := host.Compact(ctx, client, model, s.Messages, keep, cfg.APIKey, os.Environ())
	if errors.Is(err, agent.ErrNothingToCompact) {
		fmt.Fprintf(stdout, "%s: nothing to compact (%d messages)\n", s.ID, len(s.Messages))
		return nil
	}
	if err != nil {
		return fmt.Errorf("session compact: %w (the session is unchanged)", err)
	}
	before := len(s.Messages)
	s.Messages = msgs
	if err := store.Save(ctx, s); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: folded %d message groups into the digest, %d → %d messages, about %d → %d tokens (side call: %d input, %d output tokens)\n",
		s.ID, c.FoldedGroups, before, len(msgs), c.BeforeTokens, c.AfterTokens, c.Usage.PromptTokens, c.Usage.CompletionTokens)
	return nil
}
