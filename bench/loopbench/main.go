// Command loopbench measures the odek binary's own overhead: it serves a
// scripted model from an in-process fake OpenAI-compatible server that
// answers instantly, runs `odek run` against it and reports CPU time (user
// + sys of the whole odek process, from rusage) per model call and peak
// RSS. See docs/BENCHMARKS.md for how the figures are used.
//
//	go build -o /tmp/odek ./cmd/odek && go run ./bench/loopbench -odek /tmp/odek -iters 50 -result-bytes 200
//
// With -otel off,http://127.0.0.1:4318,http://127.0.0.1:1 each run goes
// through the tracing modes in turn (off, a live collector, a dead one), so
// a change in the machine's load hits every mode alike (issue 24).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	otelModes := flag.String("otel", "off", "comma-separated tracing modes, interleaved within each run: off, or an OTLP/HTTP base URL given to odek as OTEL_EXPORTER_OTLP_ENDPOINT (a live collector, or a dead port)")
	baseline := flag.String("baseline", "", "another odek binary (main's) run with tracing off as one more interleaved mode, \"baseline\"")
	flag.Parse()
	modes := strings.Split(*otelModes, ",")
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
	var iterN atomic.Int64
	h := llmtest.NewScriptHandler(func(r llmtest.Recorded) llmtest.Turn {
		if len(r.Messages) > 0 && r.Messages[0].Content == agent.DigestPrompt {
			return llmtest.Turn{Content: "## Facts\n- the file was read repeatedly", Burst: *burst}
		}
		n := int(iterN.Add(1)) - 1
		u := &llm.Usage{PromptTokens: 100 + n*50, CompletionTokens: 20}
		if n >= *iters {
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

	cpus, users, syss, rss := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	var calls int
	for i := 0; i < *runs; i++ {
		for _, mode := range modes {
			iterN.Store(0)
			before := h.Calls()
			exe := *bin
			if mode == "baseline" {
				exe = *baseline
			}
			cmd := exec.Command(exe, "run", "--quiet", "--max-iter", strconv.Itoa(*iters+1), "read the file repeatedly")
			cmd.Dir = work
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "ODEK_HOME=" + home,
				"ODEK_BASE_URL=" + base, "ODEK_MODEL=bench", "ODEK_API_KEY=sk-bench-0123456789"}
			if v, ok := os.LookupEnv("GOGC"); ok {
				cmd.Env = append(cmd.Env, "GOGC="+v)
			}
			if mode != "off" && mode != "baseline" {
				cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+mode)
			}
			var se bytes.Buffer
			cmd.Stderr = &se
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "odek run failed: %v\n%s", err, se.String())
				os.Exit(1)
			}
			calls = h.Calls() - before
			ps := cmd.ProcessState
			user, sys := ps.UserTime(), ps.SystemTime()
			cpus[mode] = append(cpus[mode], float64(user+sys)/float64(time.Millisecond)/float64(calls))
			users[mode] = append(users[mode], float64(user)/float64(time.Millisecond)/float64(calls))
			syss[mode] = append(syss[mode], float64(sys)/float64(time.Millisecond)/float64(calls))
			rss[mode] = append(rss[mode], peakRSSMiB(ps))
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
