package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/odekrun/odek/mcpclient"
)

// hugeOutcome is what one client did with one 200 MiB response line.
type hugeOutcome struct {
	Client   string  `json:"client"`
	PeakMiB  float64 `json:"peak_mib"` // VmHWM growth over the idle VmRSS
	Seconds  float64 `json:"seconds"`
	Result   string  `json:"result"` // "error: …", "ok (N bytes)" or "no answer within …"
	EchoNext string  `json:"echo_next"`
}

// runHuge measures each client in a child process of its own (so peak
// RSS is that client's alone) and prints a table.
func runHuge(mib int, wait time.Duration) {
	self, err := os.Executable()
	if err != nil {
		fatal("%v", err)
	}
	var rows []hugeOutcome
	for _, name := range []string{"odek", "go-sdk", "mcp-go"} {
		cmd := exec.Command(self, "-huge-child="+name, "-huge-mib="+strconv.Itoa(mib), "-huge-wait="+wait.String())
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			fatal("%s child: %v", name, err)
		}
		var o hugeOutcome
		if err := json.Unmarshal(out, &o); err != nil {
			fatal("%s child said %q: %v", name, out, err)
		}
		rows = append(rows, o)
	}
	fmt.Printf("one %d MiB response line (odek's max_response_bytes: the default %d MiB), a fresh process per client, %s\n\n",
		mib, mcpclient.DefaultMaxResponseBytes>>20, runtime.Version())
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "client\tpeak RSS above idle\ttime\toutcome\tnext echo call")
	for _, o := range rows {
		fmt.Fprintf(tw, "%s\t%.1f MiB\t%.2fs\t%s\t%s\n", o.Client, o.PeakMiB, o.Seconds, o.Result, o.EchoNext)
	}
	tw.Flush()
}

// hugeChild runs in the child: start the client against the fixture with
// its chaos tools, reset the peak RSS, call huge_line, report as JSON.
func hugeChild(name string, mib int, wait time.Duration) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		fatal("cannot reset the peak RSS (Linux only): %v", err)
	}
	fixture, err := buildFixture()
	if err != nil {
		fatal("%v", err)
	}
	env, _ := mcpclient.FilterEnv(os.Environ(), nil, nil)
	ctx := context.Background()
	var d *driver
	switch name {
	case "odek":
		d, err = startOdek(ctx, fixture, env, "-chaos")
	case "go-sdk":
		d, err = startGoSDK(ctx, fixture, env, "-chaos")
	case "mcp-go":
		d, err = startMark3(ctx, fixture, env, "-chaos")
	}
	if err != nil {
		fatal("%v", err)
	}
	if err := d.call(ctx, "echo", echoArgs); err != nil {
		fatal("%s warm-up: %v", name, err)
	}
	runtime.GC()
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	base := procStatusKiB("VmRSS")
	o := hugeOutcome{Client: name}
	cctx, cancel := context.WithTimeout(ctx, wait)
	start := time.Now()
	err = d.call(cctx, "huge_line", json.RawMessage(`{"mib":`+strconv.Itoa(mib)+`}`))
	o.Seconds = time.Since(start).Seconds()
	timedOut := cctx.Err() == context.DeadlineExceeded
	cancel()
	o.PeakMiB = float64(procStatusKiB("VmHWM")-base) / 1024
	switch {
	case timedOut:
		o.Result = fmt.Sprintf("no answer within %s", wait)
	case err != nil:
		o.Result = "error: " + clip(err.Error(), 150)
	default:
		o.Result = "accepted the whole line"
	}
	ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if err := d.call(ectx, "echo", echoArgs); err != nil {
		o.EchoNext = "fails: " + clip(err.Error(), 60)
	} else {
		o.EchoNext = "ok"
	}
	cancel()
	json.NewEncoder(os.Stdout).Encode(o)
	os.Exit(0) // without closing: a hung session must not hold up the report
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func procStatusKiB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fatal("%v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte(field+":")); ok {
			n, _ := strconv.ParseInt(string(bytes.Fields(v)[0]), 10, 64)
			return n
		}
	}
	fatal("%s not in /proc/self/status", field)
	return 0
}
