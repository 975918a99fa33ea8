package config

import (
	"reflect"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/budget"
	"github.com/odekrun/odek/internal/tools"
)

// fillAll sets every field of the struct v points to a non-zero value
// (numbers 7, strings "x", bools true, one-entry lists and maps,
// pointers to such values), so a conversion that drops a field shows.
func fillAll(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillAll(t, v.Field(i))
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(t, v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillAll(t, v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillAll(t, k)
		fillAll(t, e)
		v.SetMapIndex(k, e)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Float64:
		v.SetFloat(7)
	default:
		t.Fatalf("fillAll: unsupported kind %s", v.Kind())
	}
}

// A section's conversion carries every one of its fields: a setting
// added to Limits or LLM without its line in convert.go fails here.
func TestSectionsConvertEveryField(t *testing.T) {
	var l Limits
	fillAll(t, reflect.ValueOf(&l).Elem())
	b := l.Budget()
	want := budget.Limits{MaxRuntime: 7 * time.Second, MaxToolCalls: 7, MaxInputTokens: 7, MaxOutputTokens: 7, MaxCostUSD: 7}
	if b != want {
		t.Errorf("Limits.Budget() = %+v, want %+v", b, want)
	}
	p := l.Prices("")
	if p.Flat.InputPerMillionUSD == nil || p.Flat.OutputPerMillionUSD == nil || p.Flat.CachedInputPerMillionUSD == nil {
		t.Errorf("Limits.Prices flat = %+v: a price was dropped", p.Flat)
	}
	if m, ok := p.Models["x"]; !ok || m.InputPerMillionUSD == nil || m.OutputPerMillionUSD == nil || m.CachedInputPerMillionUSD == nil {
		t.Errorf("Limits.Prices models = %+v: a model price was dropped", p.Models)
	}
	if p := (Limits{}).Prices("deepseek"); p.CachedShare == 0 {
		t.Errorf("the preset's cache discount is not applied: %+v", p)
	}

	c := &Config{BaseURL: "https://api.example/v1", APIKey: "k", Provider: "x"}
	fillAll(t, reflect.ValueOf(&c.LLM).Elem())
	c.LLM.Stream = false // the one field whose conversion inverts it
	c.Context.CacheBreakpointModels = []string{"x"}
	lc := reflect.ValueOf(c.LLMConfig())
	for _, name := range []string{"BaseURL", "APIKey", "DisableStreaming", "MaxAttempts", "IdleTimeout", "RequestTimeout", "Provider", "StrictToolModels", "ResponseFormatModels", "KeepThinkTags", "CacheBreakpointModels"} {
		if lc.FieldByName(name).IsZero() {
			t.Errorf("LLMConfig drops %s", name)
		}
	}
	// Every field of the llm section is among those.
	if n := reflect.TypeFor[LLM]().NumField(); n != 7 {
		t.Errorf("the llm section has %d fields; LLMConfig and this test know 7", n)
	}

	d := Dangerous{Classes: map[string]Action{"install": ActionAllow}, NonInteractive: ActionAllow}
	pol := d.Policy()
	if pol.Classes[tools.Class("install")] != tools.Action(ActionAllow) || pol.NonInteractive != tools.Action(ActionAllow) {
		t.Errorf("Dangerous.Policy() = %+v", pol)
	}
}
