package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/telemetry"
)

// cmdConfig prints the effective configuration (show) or the environment
// variables odek reads (env).
func cmdConfig(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageErr("odek config needs a subcommand: show or env")
	}
	switch args[0] {
	case "env":
		if len(args) > 1 {
			return usageErr("odek config env takes no arguments, got %q", args[1:])
		}
		groups := append(config.EnvGroups(), config.EnvGroup{Title: "odek-bot, the Telegram front end (odek-bot --help)", Vars: &config.BotEnv{}},
			config.EnvGroup{Title: "Tracing, OpenTelemetry (every command; docs/OBSERVABILITY.md)", Vars: &telemetry.EnvVars{}}) // issue 24
		fmt.Fprint(stdout, config.EnvText(groups))
		return nil
	case "show":
		fs := flag.NewFlagSet("odek config show", flag.ContinueOnError)
		fs.SetOutput(stderr)
		jsonOut := fs.Bool("json", false, "print one JSON object per setting and line: key, value, source")
		if err := fs.Parse(args[1:]); err != nil {
			return withCode(exitSetup, err)
		}
		if fs.NArg() > 0 {
			return usageErr("odek config show takes no arguments, got %q", fs.Args())
		}
		cfg, warnings, err := config.Load(config.Options{})
		if err != nil {
			return withCode(exitSetup, err)
		}
		for _, w := range warnings {
			fmt.Fprintln(stderr, "odek: warning:", w.String())
		}
		settings := append(cfg.Settings(), effectiveWindow(cfg))
		if *jsonOut {
			enc := json.NewEncoder(stdout)
			for _, s := range settings {
				if err := enc.Encode(map[string]string{"key": s.Key, "value": s.Value, "source": s.Source}); err != nil {
					return err
				}
			}
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
		for _, s := range settings {
			v, src := s.Value, s.Source
			if v == "" {
				v = "-"
			}
			if src == "" {
				src = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Key, clipValue(v), src)
		}
		return tw.Flush()
	}
	return usageErr("unknown subcommand odek config %q (want show or env)", args[0])
}

// effectiveWindow is the context window a run of the configured model
// gets without asking the endpoint (llm.ResolveWindow; a run may still
// learn a smaller or larger one from a local server or OpenRouter, and
// logs it).
func effectiveWindow(cfg *config.Config) config.Setting {
	provider := cfg.Provider
	if provider == "" {
		provider = llm.PresetForURL(cfg.BaseURL)
	}
	w := llm.ResolveWindow(cfg.Model, cfg.Context.Window[cfg.Model], 0, provider)
	v := fmt.Sprintf("%d tokens for %s", w.Tokens, cfg.Model)
	if w.Source == llm.WindowFromDefault {
		v += " (unknown model: conservative default)"
	}
	return config.Setting{Key: "context_window.effective", Value: v, Source: w.Source}
}

// clipValue keeps a table row readable (a system prompt can be long).
func clipValue(v string) string {
	const max = 80
	r := []rune(v)
	if len(r) <= max {
		return v
	}
	return string(r[:max-1]) + "…"
}
