// Command loopbench measures the odek binary's own overhead: it serves a
// scripted model from an in-process fake OpenAI-compatible server that
// answers instantly, runs `odek run` against it and reports CPU time (user
// + sys of the whole odek process, from rusage) per model call and peak
// RSS. See docs/BENCHMARKS.md for how the figures are used.
//
//	go build -o /tmp/odek ./cmd/odek && go run ./bench/loopbench -odek /tmp/odek -iters 50 -result-bytes 200
//
// With -floor /tmp/empty (a Go main that does nothing) each round also
// runs that program, so peak RSS figures come with the least a Go process
// holds on the same machine at the same moment.
//
// With -otel off,http://127.0.0.1:4318,http://127.0.0.1:1 each run goes
// through the tracing modes in turn (off, a live collector, a dead one), so
// a change in the machine's load hits every mode alike (issue 24).
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

func main() {
	bin := flag.String("odek", "odek", "path to the odek binary")
	iters := flag.Int("iters", 50, "tool iterations before the final answer")
	resultBytes := flag.Int("result-bytes", 200, "size of the file read_file returns each iteration")
	runs := flag.Int("runs", 5, "repetitions (the median is reported)")
	stream := flag.Bool("stream", true, "let odek stream (false sets llm.stream=false via config)")
	startup := flag.Bool("startup", false, "measure `odek version` wall time instead")
	burst := flag.Bool("burst", false, "send each streamed reply in one write (a server whose answer is ready) instead of one write per SSE event")
	ratio := flag.String("ratio", "", "A,B: instead of one figure, compare CPU per model call at A and at B iterations (and at 1, the start-up baseline), interleaved within each run, and report B's figure over A's")
	otelModes := flag.String("otel", "off", "comma-separated tracing modes, interleaved within each run: off, or an OTLP/HTTP base URL given to odek as OTEL_EXPORTER_OTLP_ENDPOINT (a live collector, or a dead port), optionally followed by ;KEY=VALUE variables for that mode (;OTEL_TRACES_SAMPLER=always_off); a mode prefixed baseline: runs the -baseline binary in that mode (old tracing code against new in one run)")
	baseline := flag.String("baseline", "", "another odek binary (main's) run with tracing off as one more interleaved mode, \"baseline\"")
	bins := flag.String("bins", "", "NAME=PATH,…: more odek binaries (one per commit of a series of cuts), each run in a mode prefixed NAME: as -baseline's are with baseline: (-otel off,a:off,a:http://…)")
	ref := flag.String("ref", "", "the mode each other mode's per-run ratio is taken over (default: off when it runs, else the first mode); baseline:http://… compares two binaries' traced runs")
	raw := flag.String("raw", "", "also write every run's CPU per model call to this CSV file (round,mode,cpu_ms_per_call), for statistics the summary does not print")
	floor := flag.String("floor", "", "a program run without arguments once per round, interleaved with the modes, whose peak RSS is reported as the floor (an empty Go main: the least any Go process holds on this machine)")
	flag.Parse()
	modes := strings.Split(*otelModes, ",")
	named := map[string]string{}
	for _, nb := range strings.Split(*bins, ",") {
		name, path, ok := strings.Cut(nb, "=")
		if nb == "" {
			continue
		}
		if !ok || name == "" || path == "" || name == "http" || name == "https" || name == "baseline" {
			fmt.Fprintf(os.Stderr, "-bins %q: want NAME=PATH (NAME not http, https or baseline)\n", nb)
			os.Exit(2)
		}
		named[name] = path
	}
	if *baseline != "" {
		modes = append([]string{"baseline"}, modes...)
	}
	if *startup {
		measureStartup(*bin, *runs)
		return
	}

	work, _ := os.MkdirTemp("", "loopbench")
	defer os.RemoveAll(work)
	content := strings.Repeat("x", *resultBytes-1) + "\n"
	os.WriteFile(filepath.Join(work, "small.txt"), []byte(content), 0o644)
	home := filepath.Join(work, "home")
	os.MkdirAll(home, 0o700)
	if !*stream {
		os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"llm":{"stream":false}}`), 0o600)
	}

	// Iterations are counted by the handler (reset before each run), not
	// from the transcript, which compaction shortens; a compaction's digest
	// side call is answered with a short digest.
	var iterN, limit atomic.Int64
	h := llmtest.NewScriptHandler(func(r llmtest.Recorded) llmtest.Turn {
		if len(r.Messages) > 0 && r.Messages[0].Content == agent.DigestPrompt {
			return llmtest.Turn{Content: "## Facts\n- the file was read repeatedly", Burst: *burst}
		}
		n := int(iterN.Add(1)) - 1
		u := &llm.Usage{PromptTokens: 100 + n*50, CompletionTokens: 20}
		if n >= int(limit.Load()) {
			return llmtest.Turn{Content: "done", Usage: u, Burst: *burst}
		}
		return llmtest.Turn{Usage: u, ChunkSize: 64, Burst: *burst, ToolCalls: []llmtest.Call{{
			ID: "c" + strconv.Itoa(n), Name: "read_file", Arguments: `{"path":"small.txt"}`}}}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go http.Serve(ln, h)
	base := "http://" + ln.Addr().String() + "/v1"

	// runOnce runs `odek run` for n tool iterations in tracing mode mode
	// and returns its CPU time (user, sys), the model calls it made and
	// its peak RSS.
	runOnce := func(n int, mode string) (user, sys time.Duration, calls int, rssMiB float64) {
		iterN.Store(0)
		limit.Store(int64(n))
		before := h.Calls()
		exe := *bin
		if mode == "baseline" {
			exe = *baseline
		}
		if rest, ok := strings.CutPrefix(mode, "baseline:"); ok { // the baseline binary, traced
			exe, mode = *baseline, rest
		}
		if name, rest, ok := strings.Cut(mode, ":"); ok && named[name] != "" { // a -bins binary
			exe, mode = named[name], rest
		}
		cmd := exec.Command(exe, "run", "--quiet", "--max-iter", strconv.Itoa(n+1), "read the file repeatedly")
		cmd.Dir = work
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "ODEK_HOME=" + home,
			"ODEK_BASE_URL=" + base, "ODEK_MODEL=bench", "ODEK_API_KEY=sk-bench-0123456789"}
		if v, ok := os.LookupEnv("GOGC"); ok {
			cmd.Env = append(cmd.Env, "GOGC="+v)
		}
		if mode != "off" && mode != "baseline" {
			// URL;KEY=V;… adds variables (a sampler) to that mode.
			parts := strings.Split(mode, ";")
			cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+parts[0])
			cmd.Env = append(cmd.Env, parts[1:]...)
		}
		se, err := os.CreateTemp(work, "stderr")
		if err != nil {
			panic(err)
		}
		defer se.Close()
		cmd.Stderr = se
		u, err := measure(cmd)
		if err != nil {
			msg, _ := os.ReadFile(se.Name())
			fmt.Fprintf(os.Stderr, "odek run failed: %v\n%s", err, msg)
			os.Exit(1)
		}
		return u.user, u.sys, h.Calls() - before, u.rssMiB
	}
	if *ratio != "" {
		compareIters(*ratio, *runs, *resultBytes, runOnce)
		return
	}

	cpus, users, syss, rss := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	var calls int
	var floorRSS []float64
	for i := 0; i < *runs; i++ {
		if *floor != "" {
			floorRSS = append(floorRSS, runFloor(*floor))
		}
		// Each round starts one mode further on, so no mode always runs
		// first (after the floor program) or right after the same other.
		for j := range modes {
			mode := modes[(i+j)%len(modes)]
			var user, sys time.Duration
			var r float64
			user, sys, calls, r = runOnce(*iters, mode)
			cpus[mode] = append(cpus[mode], float64(user+sys)/float64(time.Millisecond)/float64(calls))
			users[mode] = append(users[mode], float64(user)/float64(time.Millisecond)/float64(calls))
			syss[mode] = append(syss[mode], float64(sys)/float64(time.Millisecond)/float64(calls))
			rss[mode] = append(rss[mode], r)
		}
	}
	fmt.Printf("iterations=%d result_bytes=%d stream=%v model_calls=%d runs=%d\n", *iters, *resultBytes, *stream, calls, *runs)
	for _, mode := range modes {
		prefix := ""
		if len(modes) > 1 {
			prefix = "otel=" + mode + " "
		}
		fmt.Printf("%scpu_ms_per_call median=%.3f min=%.3f\n", prefix, median(cpus[mode]), minOf(cpus[mode]))
		fmt.Printf("%suser_ms_per_call median=%.3f sys_ms_per_call median=%.3f\n", prefix, median(users[mode]), median(syss[mode]))
		if rss[mode][0] < 0 {
			fmt.Println(prefix + "peak_rss_mib unknown (no rusage on " + runtime.GOOS + ")")
		} else {
			fmt.Printf("%speak_rss_mib median=%.1f max=%.1f\n", prefix, median(rss[mode]), maxOf(rss[mode]))
		}
	}
	// Each mode against the reference mode ("off" when it runs, else the
	// first) run by run: the two ran moments apart, so a change in the
	// machine's load over the rounds cancels out of the ratio, where it
	// stays in the ratio of two medians.
	refMode := *ref
	if refMode == "" {
		refMode = modes[0]
		for _, m := range modes {
			if m == "off" {
				refMode = m
			}
		}
	} else if cpus[refMode] == nil {
		fmt.Fprintf(os.Stderr, "-ref %q: not one of the modes %q\n", refMode, modes)
		os.Exit(2)
	}
	if len(modes) > 1 {
		for _, mode := range modes {
			if mode == refMode {
				continue
			}
			r := make([]float64, len(cpus[mode]))
			for i := range r {
				r[i] = cpus[mode][i] / cpus[refMode][i]
			}
			fmt.Printf("otel=%s cpu_over_%s paired median=%+.1f%% quartiles=%+.1f%%..%+.1f%%\n", mode, refMode,
				100*(median(r)-1), 100*(quantile(r, 0.25)-1), 100*(quantile(r, 0.75)-1))
		}
	}
	if *raw != "" {
		var b strings.Builder
		b.WriteString("round,mode,cpu_ms_per_call\n")
		for i := 0; i < *runs; i++ {
			for _, mode := range modes {
				fmt.Fprintf(&b, "%d,%s,%.4f\n", i, mode, cpus[mode][i])
			}
		}
		if err := os.WriteFile(*raw, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "-raw: %v\n", err)
			os.Exit(1)
		}
	}
	if len(floorRSS) > 0 && floorRSS[0] >= 0 {
		fmt.Printf("floor peak_rss_mib median=%.1f max=%.1f (%s)\n", median(floorRSS), maxOf(floorRSS), *floor)
	}
}

// runFloor runs the floor program once and returns its peak RSS in MiB.
func runFloor(bin string) float64 {
	u, err := measure(exec.Command(bin))
	if err != nil {
		fmt.Fprintf(os.Stderr, "floor %s: %v\n", bin, err)
		os.Exit(1)
	}
	return u.rssMiB
}

// usage is what measure reports of one process: CPU time and peak
// resident set in MiB (-1: unknown).
type usage struct {
	user, sys time.Duration
	rssMiB    float64
}

func measureStartup(bin string, runs int) {
	var walls []float64
	for i := 0; i < runs; i++ {
		start := time.Now()
		if err := exec.Command(bin, "version").Run(); err != nil {
			panic(err)
		}
		walls = append(walls, float64(time.Since(start))/float64(time.Millisecond))
	}
	fmt.Printf("odek version wall_ms median=%.2f min=%.2f (runs=%d)\n", median(walls), minOf(walls), runs)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

// quantile is v's q-quantile (nearest rank).
func quantile(v []float64, q float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}

func minOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// compareIters measures, interleaved within each of runs rounds so the
// machine's load hits all alike, runs of 1, A and B tool iterations, and
// reports CPU per model call at A and at B two ways: the whole process's
// CPU over its calls (start-up included, so it falls as calls rise), and
// the marginal cost of a call, (CPU(N) − CPU(1)) / (calls(N) − calls(1)),
// which leaves start-up out and grows if a call's cost grows with the
// conversation. Issue 29's target: B = 500's marginal figure within 1.3×
// of A = 50's with 8 KiB results.
func compareIters(spec string, runs, resultBytes int, runOnce func(n int, mode string) (time.Duration, time.Duration, int, float64)) {
	var a, b int
	if _, err := fmt.Sscanf(spec, "%d,%d", &a, &b); err != nil || a < 2 || b <= a {
		fmt.Fprintf(os.Stderr, "-ratio %q: want A,B with 2 ≤ A < B\n", spec)
		os.Exit(2)
	}
	var wholeA, wholeB, margA, margB, ratios []float64
	var callsA, callsB int
	ms := func(u, s time.Duration) float64 { return float64(u+s) / float64(time.Millisecond) }
	for i := 0; i < runs; i++ {
		u1, s1, c1, _ := runOnce(1, "off")
		ua, sa, ca, _ := runOnce(a, "off")
		ub, sb, cb, _ := runOnce(b, "off")
		callsA, callsB = ca, cb
		base := ms(u1, s1)
		wholeA = append(wholeA, ms(ua, sa)/float64(ca))
		wholeB = append(wholeB, ms(ub, sb)/float64(cb))
		ma := (ms(ua, sa) - base) / float64(ca-c1)
		mb := (ms(ub, sb) - base) / float64(cb-c1)
		margA, margB = append(margA, ma), append(margB, mb)
		ratios = append(ratios, mb/ma)
	}
	fmt.Printf("result_bytes=%d runs=%d (each: 1, %d and %d iterations, interleaved)\n", resultBytes, runs, a, b)
	fmt.Printf("iterations=%d model_calls=%d cpu_ms_per_call whole=%.3f marginal=%.3f (medians)\n", a, callsA, median(wholeA), median(margA))
	fmt.Printf("iterations=%d model_calls=%d cpu_ms_per_call whole=%.3f marginal=%.3f (medians)\n", b, callsB, median(wholeB), median(margB))
	fmt.Printf("marginal_ratio %d/%d median=%.2f min=%.2f max=%.2f (target ≤ 1.30)\n", b, a, median(ratios), minOf(ratios), maxOf(ratios))
}
