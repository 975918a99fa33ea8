// Command mcpsdk measures odek's MCP client side by side with the two Go
// SDK clients, github.com/modelcontextprotocol/go-sdk and
// github.com/mark3labs/mcp-go, each driving its own copy of the same Go
// fixture server (mcpclient/testdata/artifact_server.go) over stdio with
// the `echo` tool: round-trip latency (p50, p99) and calls per second, one
// caller at a time and with 8 concurrent callers.
//
// It is a separate module so the SDKs are benchmark-only: they never enter
// odek's own go.mod. Run it from this directory:
//
//	go run . [-calls 1000] [-rounds 30] [-workers 8]
//
// With -http it compares the three over Streamable HTTP instead, all
// calling one server built with the go-sdk's Streamable HTTP handler (in a
// child process):
//
//	go run . -http [-calls 1000] [-rounds 30] [-workers 8]
//
// With -huge it measures instead, for each client in a fresh process of its
// own, the peak RSS growth while the fixture sends one 200 MiB response
// line (odek's limit: the default max_response_bytes of 10 MiB), what the
// call returned and whether the next call works:
//
//	go run . -huge [-huge-mib 200] [-huge-wait 20s]
//
// The clients are measured in many short interleaved rounds (odek, go-sdk,
// mcp-go, odek, …) so that noise from other work on a shared machine
// spreads over all three instead of hitting one; latencies are pooled
// over the rounds and calls/s is the total calls over the total time.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	mark3client "github.com/mark3labs/mcp-go/client"
	mark3 "github.com/mark3labs/mcp-go/mcp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/odekrun/odek/mcpclient"
	"github.com/odekrun/odek/mcpclient/mcptest"
	"github.com/sirupsen/logrus"
)

// echoArgs are the arguments of every call, as raw JSON for all three
// clients so none pays for encoding a map.
var echoArgs = json.RawMessage(`{"text":"hello"}`)

// driver is one client connected to its own fixture process.
type driver struct {
	name  string
	call  func(ctx context.Context, tool string, args json.RawMessage) error
	close func()
}

func main() {
	calls := flag.Int("calls", 1000, "calls per client, mode and round")
	rounds := flag.Int("rounds", 30, "interleaved rounds")
	workers := flag.Int("workers", 8, "concurrent callers in the concurrent mode")
	only := flag.String("only", "", "measure only this client (odek, go-sdk, mcp-go); for profiling")
	huge := flag.Bool("huge", false, "instead: peak RSS of each client receiving one huge response line")
	hugeMiB := flag.Int("huge-mib", 200, "size of the huge line in MiB")
	hugeWait := flag.Duration("huge-wait", 20*time.Second, "how long to wait for an answer to the huge line")
	hugeChildName := flag.String("huge-child", "", "internal: measure this client in this process")
	overHTTP := flag.Bool("http", false, "compare over Streamable HTTP against one go-sdk HTTP server instead of stdio")
	serveHTTPChild := flag.Bool("serve-http", false, "internal: be the go-sdk Streamable HTTP server")
	flag.Parse()
	if *serveHTTPChild {
		serveHTTP()
		return
	}
	if *hugeChildName != "" {
		hugeChild(*hugeChildName, *hugeMiB, *hugeWait)
		return
	}
	if *huge {
		runHuge(*hugeMiB, *hugeWait)
		return
	}

	ctx := context.Background()
	type starter func(context.Context) (*driver, error)
	var starters []starter
	transport := "stdio"
	if *overHTTP {
		transport = "Streamable HTTP (one go-sdk server, loopback)"
		url, stop, err := startHTTPServer()
		if err != nil {
			fatal("starting the HTTP server: %v", err)
		}
		defer stop()
		for _, s := range []func(context.Context, string) (*driver, error){startOdekHTTP, startGoSDKHTTP, startMark3HTTP} {
			starters = append(starters, func(ctx context.Context) (*driver, error) { return s(ctx, url) })
		}
	} else {
		fixture, err := buildFixture()
		if err != nil {
			fatal("building the fixture server: %v", err)
		}
		env, _ := mcpclient.FilterEnv(os.Environ(), nil, nil)
		for _, s := range []func(context.Context, string, []string, ...string) (*driver, error){startOdek, startGoSDK, startMark3} {
			starters = append(starters, func(ctx context.Context) (*driver, error) { return s(ctx, fixture, env) })
		}
	}

	var drivers []*driver
	for _, start := range starters {
		d, err := start(ctx)
		if err != nil {
			fatal("%v", err)
		}
		defer d.close()
		if *only != "" && d.name != *only {
			continue
		}
		// Warm up: the first calls pay for page faults, cold caches
		// and the fixture's own start-up.
		if _, err := measure(ctx, d, 2000, 1); err != nil {
			fatal("%s warm-up: %v", d.name, err)
		}
		drivers = append(drivers, d)
	}

	type key struct{ client, mode string }
	results := map[key]*result{}
	modes := []struct {
		name    string
		workers int
	}{{"sequential", 1}, {fmt.Sprintf("%d concurrent", *workers), *workers}}
	for range *rounds {
		for _, m := range modes {
			for _, d := range drivers {
				r, err := measure(ctx, d, *calls, m.workers)
				if err != nil {
					fatal("%s %s: %v", d.name, m.name, err)
				}
				k := key{d.name, m.name}
				if results[k] == nil {
					results[k] = &result{}
				}
				results[k].add(r)
			}
		}
	}

	fmt.Printf("echo round trips over %s, %d calls × %d rounds per row, GOMAXPROCS=%d, %s\n\n",
		transport, *calls, *rounds, runtime.GOMAXPROCS(0), runtime.Version())
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "client\tmode\tcalls/s\tp50 µs\tp99 µs\todek ×\t")
	for _, m := range modes {
		ours := results[key{"odek", m.name}]
		for _, d := range drivers {
			r := results[key{d.name, m.name}]
			ratio := "—"
			if ours != nil && d.name != "odek" {
				ratio = fmt.Sprintf("%.2f", ours.rate()/r.rate())
			}
			fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.1f\t%.1f\t%s\t\n", d.name, m.name, r.rate(),
				micros(r.percentile(50)), micros(r.percentile(99)), ratio)
		}
	}
	tw.Flush()
	if *overHTTP {
		fmt.Println("\ntarget: odek ≥ 1.5× go-sdk's calls/s")
	} else {
		fmt.Println("\ntargets: odek ≥ 1.2× mcp-go and ≥ 2.5× go-sdk, sequential and concurrent")
	}
}

// result pools the latencies and the wall time of several rounds.
type result struct {
	lat     []time.Duration
	elapsed time.Duration
}

func (r *result) add(o *result) {
	r.lat = append(r.lat, o.lat...)
	r.elapsed += o.elapsed
}

func (r *result) rate() float64 { return float64(len(r.lat)) / r.elapsed.Seconds() }

func (r *result) percentile(p int) time.Duration {
	s := slices.Clone(r.lat)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// measure runs n calls split over workers concurrent callers.
func measure(ctx context.Context, d *driver, n, workers int) (*result, error) {
	per := max(n/workers, 1)
	lats := make([][]time.Duration, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, per)
			for range per {
				t0 := time.Now()
				if err := d.call(ctx, "echo", echoArgs); err != nil {
					errs[w] = err
					return
				}
				lat = append(lat, time.Since(t0))
			}
			lats[w] = lat
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return &result{lat: slices.Concat(lats...), elapsed: elapsed}, nil
}

// buildFixture builds the fixture server once (cached across runs).
func buildFixture() (string, error) {
	p, err := mcptest.BuildFixture()
	if err != nil {
		return "", fmt.Errorf("building the fixture server: %w", err)
	}
	return p, nil
}

func startOdek(ctx context.Context, fixture string, env []string, args ...string) (*driver, error) {
	log := logrus.New()
	log.Out = io.Discard
	c, err := mcpclient.Start(ctx, mcpclient.ServerConfig{
		Name:    "bench",
		Command: fixture,
		Args:    args,
		Env:     env,
		Logger:  log,
	})
	if err != nil {
		return nil, fmt.Errorf("odek: %w", err)
	}
	return &driver{
		name: "odek",
		call: func(ctx context.Context, tool string, args json.RawMessage) error {
			r, err := c.Call(ctx, tool, args)
			if err == nil && r.IsError {
				err = fmt.Errorf("tool error: %s", r.Text)
			}
			return err
		},
		close: func() { c.Close(context.Background()) },
	}, nil
}

func startGoSDK(ctx context.Context, fixture string, env []string, args ...string) (*driver, error) {
	client := gosdk.NewClient(&gosdk.Implementation{Name: "bench", Version: "1"}, nil)
	cmd := exec.Command(fixture, args...)
	cmd.Env = env
	cs, err := client.Connect(ctx, &gosdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("go-sdk: %w", err)
	}
	return &driver{
		name: "go-sdk",
		call: func(ctx context.Context, tool string, args json.RawMessage) error {
			r, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: tool, Arguments: args})
			if err == nil && r.IsError {
				err = fmt.Errorf("tool error")
			}
			return err
		},
		close: func() { cs.Close() },
	}, nil
}

func startMark3(ctx context.Context, fixture string, env []string, args ...string) (*driver, error) {
	c, err := mark3client.NewStdioMCPClient(fixture, env, args...)
	if err != nil {
		return nil, fmt.Errorf("mcp-go: %w", err)
	}
	return mark3Driver(ctx, c, mark3.LATEST_PROTOCOL_VERSION)
}

// mark3Driver initializes an mcp-go client (either transport) with the
// given protocol version and wraps it as a driver.
func mark3Driver(ctx context.Context, c *mark3client.Client, version string) (*driver, error) {
	var init mark3.InitializeRequest
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mark3.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		c.Close()
		return nil, fmt.Errorf("mcp-go initialize: %w", err)
	}
	return &driver{
		name: "mcp-go",
		call: func(ctx context.Context, tool string, args json.RawMessage) error {
			var req mark3.CallToolRequest
			req.Params.Name = tool
			req.Params.Arguments = args
			r, err := c.CallTool(ctx, req)
			if err == nil && r.IsError {
				err = fmt.Errorf("tool error")
			}
			return err
		},
		close: func() { c.Close() },
	}, nil
}

func fatal(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mcpsdk: "+format+"\n", args...)
	os.Exit(1)
}
