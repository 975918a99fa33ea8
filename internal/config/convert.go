package config

import (
	"time"

	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/tools"
)

// A section converts itself into what a run needs, so a setting is
// declared once (its section's field) and read in one place (the
// section's method); internal/host assembles the run from these.

// Budget is the section's execution limits as the run's budget limits
// (0 ⇒ unlimited, as in the file).
func (l Limits) Budget() budget.Limits {
	return budget.Limits{
		MaxRuntime:   time.Duration(l.MaxRuntimeSeconds * float64(time.Second)),
		MaxToolCalls: l.MaxToolCalls, MaxInputTokens: l.MaxInputTokens, MaxOutputTokens: l.MaxOutputTokens,
		MaxCostUSD: l.MaxCostUSD,
	}
}

// Prices are the section's prices as the budget's price table; preset is
// the endpoint's provider preset (Config.Preset), whose documented
// prompt-cache discount applies where no cached price is set.
func (l Limits) Prices(preset string) budget.PriceTable {
	prices := budget.PriceTable{Flat: l.flat()}
	if p, ok := llm.LookupPreset(preset); ok {
		prices.CachedShare = p.CachedInputShare
	}
	if len(l.ModelPrices) > 0 {
		prices.Models = make(map[string]budget.Prices, len(l.ModelPrices))
		for m, p := range l.ModelPrices {
			prices.Models[m] = p.prices()
		}
	}
	return prices
}

func (l Limits) flat() budget.Prices {
	return ModelPrice{l.InputCostPerMillionUSD, l.OutputCostPerMillionUSD, l.CachedInputCostPerMillionUSD}.prices()
}

func (p ModelPrice) prices() budget.Prices {
	return budget.Prices{InputPerMillionUSD: p.InputCostPerMillionUSD, OutputPerMillionUSD: p.OutputCostPerMillionUSD,
		CachedInputPerMillionUSD: p.CachedInputCostPerMillionUSD}
}

// Policy is the danger policy: the tools package's defaults with the
// section's overrides.
func (d Dangerous) Policy() tools.Policy {
	p := tools.DefaultPolicy()
	for class, action := range d.Classes {
		p.Classes[tools.Class(class)] = tools.Action(action)
	}
	if d.NonInteractive != "" {
		p.NonInteractive = tools.Action(d.NonInteractive)
	}
	return p
}

// Preset is the endpoint's provider preset: the named one, or the one
// recognised from the base URL ("" for none).
func (c *Config) Preset() string {
	if c.Provider != "" {
		return c.Provider
	}
	return llm.PresetForURL(c.BaseURL)
}

// LLMConfig is the chat-completions client the configuration describes:
// the endpoint, the llm section and the context section's cache
// breakpoints.
func (c *Config) LLMConfig() llm.Config {
	return llm.Config{
		BaseURL:          c.BaseURL,
		APIKey:           c.APIKey,
		DisableStreaming: !c.LLM.Stream,
		MaxAttempts:      c.LLM.MaxAttempts,
		IdleTimeout:      c.LLM.IdleTimeout(),
		RequestTimeout:   c.LLM.RequestTimeout(),
		Provider:         c.Provider,
		StrictToolModels: c.LLM.StrictToolModels,
		// Native structured output, opt-in per model.
		ResponseFormatModels: c.LLM.ResponseFormatModels,
		KeepThinkTags:        c.LLM.KeepThinkTags,
		// Explicit prompt-cache breakpoints, opt-in per model.
		CacheBreakpointModels: c.Context.CacheBreakpointModels,
	}
}
