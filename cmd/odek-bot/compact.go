package main

import (
	"context"
	"errors"
	"os"

	"github.com/redis/go-redis/v9"
	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/bot"
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/host"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/session"
	"github.com/odekrun/odek/queue"
)

// compactKeep is how many of the newest message groups /compact keeps
// verbatim (as `odek session compact` does by default).
const compactKeep = 2

// compactor is the bot's /compact: it loads a chat's session from the
// store the workers use (the session id a worker derives from the job,
// host.JobSessionID), folds its oldest groups into the digest with one
// side call to the model (agent.Compact) and saves it. It is used between
// jobs only (the bot refuses /compact while the chat has an unfinished
// job), so no worker writes the session meanwhile.
type compactor struct {
	store  session.Store
	client agent.Model
	model  string // the default model
	key    string // the endpoint's key, masked in the digest
}

func (c compactor) Compact(ctx context.Context, r bot.CompactRequest) (bot.Compacted, error) {
	s, err := c.store.Load(ctx, host.JobSessionID(queue.Job{ChatID: r.ChatID, SessionID: r.Session}))
	if errors.Is(err, session.ErrNotFound) {
		return bot.Compacted{}, nil
	}
	if err != nil {
		return bot.Compacted{}, err
	}
	model := c.model
	switch {
	case r.Model != "":
		model = r.Model
	case s.Model != "":
		model = s.Model
	}
	msgs, cp, err := host.Compact(ctx, c.client, model, s.Messages, compactKeep, c.key, os.Environ())
	out := bot.Compacted{SideInputTokens: cp.Usage.PromptTokens, SideOutput: cp.Usage.CompletionTokens}
	if errors.Is(err, agent.ErrNothingToCompact) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	s.Messages = msgs
	if err := c.store.Save(ctx, s); err != nil {
		return out, err
	}
	out.Folded, out.BeforeTokens, out.AfterTokens = cp.FoldedGroups, cp.BeforeTokens, cp.AfterTokens
	return out, nil
}

// modelSide wires the bot's two model-facing settings besides
// transcription: /compact (a compactor on store) and the context window
// /status shows. The compactor is set only when this process may talk to
// the model: in embedded mode (its workers do anyway) or when the
// operator gave the bot a model key of its own; the compose bot, given
// none, gets no compactor here and asks its workers instead
// (bot.QueueCompactor: a queue.KindCompact job). The window comes from the
// operator's context_window, else the built-in table and the provider
// preset (llm.ResolveWindow), without asking the endpoint.
func modelSide(cfg *config.Config, store session.Store, embedded bool, log logrus.FieldLogger) (bot.Compactor, func(string) int) {
	preset := cfg.Provider
	if preset == "" {
		preset = llm.PresetForURL(cfg.BaseURL)
	}
	window := func(model string) int {
		if model == "" {
			model = cfg.Model
		}
		return llm.ResolveWindow(model, cfg.Context.Window[model], 0, preset).Tokens
	}
	if !embedded && cfg.APIKey == "" {
		return nil, window
	}
	client, err := host.NewLLM(cfg)
	if err != nil {
		log.WithError(err).Warn("odek-bot: no model client for /compact; it is turned off")
		return nil, window
	}
	return compactor{store: store, client: client, model: cfg.Model, key: cfg.APIKey}, window
}

// redisSessions is the workers' session store on rc (as `odek worker`
// opens it).
func redisSessions(rc redis.UniversalClient, prefix string) session.Store {
	return &session.RedisStore{Client: rc, Prefix: prefix}
}
