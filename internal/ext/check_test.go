package ext

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/mcpclient"
	"github.com/odekrun/odek/mcpclient/mcptest"
)

func TestParseCall(t *testing.T) {
	tests := []struct {
		in, tool, args, errHas string
	}{
		{in: "echo", tool: "echo", args: "{}"},
		{in: "echo=", tool: "echo", args: "{}"},
		{in: `echo={"text":"a=b"}`, tool: "echo", args: `{"text":"a=b"}`},
		{in: `echo=[1]`, errHas: "must be a JSON object"},
		{in: `echo=null`, errHas: "must be a JSON object"},
		{in: `echo={bad`, errHas: "must be a JSON object"},
		{in: `bad name={}`, errHas: "tool name"},
		{in: `={}`, errHas: "tool name"},
	}
	for _, tc := range tests {
		c, err := ParseCheckCall(tc.in)
		if tc.errHas != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("ParseCheckCall(%q) err %v, want %q", tc.in, err, tc.errHas)
			}
			continue
		}
		if err != nil || c.Tool != tc.tool || string(c.Args) != tc.args {
			t.Errorf("ParseCheckCall(%q) = %+v, %v", tc.in, c, err)
		}
	}
}

func TestServerNameFor(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/log-analyzer-mcp":     "log-analyzer-mcp",
		"./srv.py":                      "srv-py",
		"a__b":                          "a_-b",
		"/x/" + strings.Repeat("n", 80): strings.Repeat("n", 32),
		"/":                             "-",
		"..":                            "--",
	} {
		if got := ServerNameFor(in); got != want {
			t.Errorf("ServerNameFor(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLatencySummary(t *testing.T) {
	if got := latencySummary(nil); got != "-" {
		t.Error(got)
	}
	if got := latencySummary([]time.Duration{1500 * time.Microsecond}); got != "1.5ms" {
		t.Error(got)
	}
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if got := latencySummary(d); got != "100 calls, p50 51ms, p99 100ms, max 100ms" {
		t.Error(got)
	}
}

// Check is usable without the binary: the rules run against a real
// server process and land in the report, counted.
func TestCheckReportsRulesOfARealServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	call, err := ParseCheckCall(`echo={"text":"hi"}`)
	if err != nil {
		t.Fatal(err)
	}
	var good, bad bytes.Buffer
	rep := &CheckReport{W: &good}
	Check(ctx, mcptest.Config(t, "fx"), CheckOptions{Calls: []CheckCall{call}, Repeat: 2}, rep)
	if rep.Fail != 0 || rep.Pass < 7 || !strings.Contains(good.String(), "PASS  call echo              2 code points; latency 2 calls") {
		t.Fatalf("pass %d fail %d:\n%s", rep.Pass, rep.Fail, good.String())
	}
	rep = &CheckReport{W: &bad}
	Check(ctx, mcptest.Config(t, "fx", "-mode=garbage"), CheckOptions{Calls: []CheckCall{call}}, rep)
	if rep.Fail != 1 || !strings.Contains(bad.String(), "FAIL  stdout") {
		t.Fatalf("garbage on stdout: fail %d:\n%s", rep.Fail, bad.String())
	}
}

// ext check warns about every schema odek repairs before a provider sees
// it, and about tools without a description.
func TestCheckWarnsAboutRepairedSchemas(t *testing.T) {
	var out strings.Builder
	rep := &CheckReport{W: &out}
	checkToolNames(rep, "srv", []mcpclient.Tool{
		{Name: "fine", Description: "ok", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)},
		{Name: "untyped", Description: "no type", InputSchema: json.RawMessage(`{"properties":{"a":{"type":"string"}}}`)},
		{Name: "bare", InputSchema: json.RawMessage(`{"type":"object","properties":{},"required":["ghost"]}`)},
	})
	got := out.String()
	for _, want := range []string{"tool untyped: inputSchema repaired at top level", "tool bare: inputSchema repaired", "tool bare has no description"} {
		if !strings.Contains(got, want) {
			t.Errorf("ext check output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "tool fine:") {
		t.Errorf("a valid schema was reported:\n%s", got)
	}
}
