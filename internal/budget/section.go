package budget

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
)

// ErrInvalidSection is wrapped by every error of FromSections.
var ErrInvalidSection = errors.New("budget: invalid limits section")

// Section is the `limits` section of a config file, as JSON. Absent keys and
// zero values mean unlimited (limits) or unknown (prices).
type Section struct {
	// MaxRuntimeSeconds bounds wall-clock runtime, in seconds (fractions allowed).
	MaxRuntimeSeconds float64 `json:"max_runtime_seconds"`
	// MaxToolCalls bounds tool calls (count).
	MaxToolCalls int `json:"max_tool_calls"`
	// MaxInputTokens bounds prompt tokens summed over calls.
	MaxInputTokens int `json:"max_input_tokens"`
	// MaxOutputTokens bounds completion tokens summed over calls.
	MaxOutputTokens int `json:"max_output_tokens"`
	// MaxCostUSD bounds the estimated cost, in US dollars.
	MaxCostUSD float64 `json:"max_cost_usd"`
	// InputCostPerMillionUSD is the flat input price, USD per million tokens;
	// absent: unknown. Operator file only.
	InputCostPerMillionUSD *float64 `json:"input_cost_per_million_usd"`
	// OutputCostPerMillionUSD is the flat output price, USD per million
	// tokens; absent: unknown. Operator file only.
	OutputCostPerMillionUSD *float64 `json:"output_cost_per_million_usd"`
	// ModelPrices overrides the flat prices per exact model id. Operator
	// file only.
	ModelPrices map[string]ModelPrice `json:"model_prices"`
}

// ModelPrice is one model_prices entry; an absent price falls back to the
// flat one.
type ModelPrice struct {
	InputCostPerMillionUSD  *float64 `json:"input_cost_per_million_usd"`
	OutputCostPerMillionUSD *float64 `json:"output_cost_per_million_usd"`
}

// maxRuntimeSeconds keeps MaxRuntimeSeconds within time.Duration (about 292
// years would overflow; 100 years is plenty).
const maxRuntimeSeconds = 100 * 365 * 24 * 3600

func sectionErr(layer, field, format string, args ...any) error {
	return fmt.Errorf("%w: %s limits.%s: %s", ErrInvalidSection, layer, field, fmt.Sprintf(format, args...))
}

// parseSection decodes and validates one layer's section. Unknown keys are
// errors, so a misspelt limit never silently means unlimited.
func parseSection(layer string, raw json.RawMessage) (Section, error) {
	var s Section
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return s, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("%w: %s limits: %v", ErrInvalidSection, layer, err)
	}
	if dec.More() {
		return s, fmt.Errorf("%w: %s limits: trailing data after the object", ErrInvalidSection, layer)
	}
	nonNeg := func(field string, v float64) error {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return sectionErr(layer, field, "got %g, want a value >= 0", v)
		}
		return nil
	}
	checks := []struct {
		field string
		v     float64
	}{
		{"max_runtime_seconds", s.MaxRuntimeSeconds},
		{"max_tool_calls", float64(s.MaxToolCalls)},
		{"max_input_tokens", float64(s.MaxInputTokens)},
		{"max_output_tokens", float64(s.MaxOutputTokens)},
		{"max_cost_usd", s.MaxCostUSD},
	}
	if s.InputCostPerMillionUSD != nil {
		checks = append(checks, struct {
			field string
			v     float64
		}{"input_cost_per_million_usd", *s.InputCostPerMillionUSD})
	}
	if s.OutputCostPerMillionUSD != nil {
		checks = append(checks, struct {
			field string
			v     float64
		}{"output_cost_per_million_usd", *s.OutputCostPerMillionUSD})
	}
	for _, c := range checks {
		if err := nonNeg(c.field, c.v); err != nil {
			return s, err
		}
	}
	if s.MaxRuntimeSeconds > maxRuntimeSeconds {
		return s, sectionErr(layer, "max_runtime_seconds", "got %g, exceeding the maximum %d", s.MaxRuntimeSeconds, maxRuntimeSeconds)
	}
	models := make([]string, 0, len(s.ModelPrices))
	for m := range s.ModelPrices {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		mp := s.ModelPrices[m]
		if m == "" {
			return s, sectionErr(layer, "model_prices", "empty model id")
		}
		if mp.InputCostPerMillionUSD != nil {
			if err := nonNeg(fmt.Sprintf("model_prices[%q].input_cost_per_million_usd", m), *mp.InputCostPerMillionUSD); err != nil {
				return s, err
			}
		}
		if mp.OutputCostPerMillionUSD != nil {
			if err := nonNeg(fmt.Sprintf("model_prices[%q].output_cost_per_million_usd", m), *mp.OutputCostPerMillionUSD); err != nil {
				return s, err
			}
		}
	}
	return s, nil
}

// Limits converts the section's limits.
func (s Section) Limits() Limits {
	return Limits{
		MaxRuntime:      time.Duration(s.MaxRuntimeSeconds * float64(time.Second)),
		MaxToolCalls:    s.MaxToolCalls,
		MaxInputTokens:  s.MaxInputTokens,
		MaxOutputTokens: s.MaxOutputTokens,
		MaxCostUSD:      s.MaxCostUSD,
	}
}

// PriceTable converts the section's prices.
func (s Section) PriceTable() PriceTable {
	t := PriceTable{Flat: Prices{InputPerMillionUSD: s.InputCostPerMillionUSD, OutputPerMillionUSD: s.OutputCostPerMillionUSD}}
	if len(s.ModelPrices) > 0 {
		t.Models = make(map[string]Prices, len(s.ModelPrices))
		for m, p := range s.ModelPrices {
			t.Models[m] = Prices{InputPerMillionUSD: p.InputCostPerMillionUSD, OutputPerMillionUSD: p.OutputCostPerMillionUSD}
		}
	}
	return t
}

// FromSections parses the operator's and the project's `limits` sections
// (raw JSON objects; nil or empty when the file or section is absent) and
// merges them with MergeLimits. Prices come from the operator only: a
// project section that sets any price, flat or per model, is an error naming
// the field. Negative, NaN or unknown keys are errors naming the layer and
// field. Warnings report clamped project limits.
func FromSections(operator, project json.RawMessage) (Limits, PriceTable, []string, error) {
	op, err := parseSection("operator", operator)
	if err != nil {
		return Limits{}, PriceTable{}, nil, err
	}
	pr, err := parseSection("project", project)
	if err != nil {
		return Limits{}, PriceTable{}, nil, err
	}
	switch {
	case pr.InputCostPerMillionUSD != nil:
		return Limits{}, PriceTable{}, nil, sectionErr("project", "input_cost_per_million_usd", "prices may be set only in the operator config")
	case pr.OutputCostPerMillionUSD != nil:
		return Limits{}, PriceTable{}, nil, sectionErr("project", "output_cost_per_million_usd", "prices may be set only in the operator config")
	case pr.ModelPrices != nil:
		return Limits{}, PriceTable{}, nil, sectionErr("project", "model_prices", "prices may be set only in the operator config")
	}
	l, warns := MergeLimits(op.Limits(), pr.Limits())
	return l, op.PriceTable(), warns, nil
}
