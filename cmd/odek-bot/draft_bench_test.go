package main_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/internal/bintest"
)

// BenchmarkFirstDraftAfterFirstToken measures issue 26's third figure:
// the time from the model's first token leaving the (fake) provider to the
// first streamed draft reaching the (fake) Bot API, through the real
// odek-bot binary in embedded mode (its own worker, the in-process store).
// The fake model writes its first chunk, notes the time, and holds the
// rest of the answer until the draft has arrived; each iteration is one
// message in a private chat. Reported: p50 and p99 in ms.
//
//	go test -run XXX -bench FirstDraftAfterFirstToken -benchtime 40x ./cmd/odek-bot/
//
// ODEK_BENCH_BOT_BINARY runs another odek-bot build instead (the baseline
// in docs/BENCHMARKS.md: the commit before the draft watcher).
func BenchmarkFirstDraftAfterFirstToken(b *testing.B) {
	bin := os.Getenv("ODEK_BENCH_BOT_BINARY")
	if bin == "" {
		var err error
		if bin, err = bins.Build("github.com/odekrun/odek/cmd/odek-bot"); err != nil {
			b.Fatal(err)
		}
	}
	first := make(chan time.Time, 1)
	release := make(chan struct{}, 1)
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/chat/completions" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		fmt.Fprint(w, chunk(`{"role":"assistant","content":"Hello there, here is"}`, "", false))
		fl.Flush()
		first <- time.Now()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, chunk(`{"content":" the answer."}`, "", false))
		fmt.Fprint(w, chunk(`{}`, "stop", true))
		fmt.Fprint(w, "data: [DONE]\n\n")
		fl.Flush()
	}))
	defer model.Close()
	tg := bottest.New(b)
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(),
		"TELEGRAM_BOT_TOKEN=" + bottest.Token, "TELEGRAM_API_ENDPOINT=" + tg.URL(),
		"ODEK_TELEGRAM_ALLOWED_USERS=1001", "ODEK_TELEGRAM_USER_JOBS_PER_MINUTE=-1", "ODEK_WORKERS=1",
		"ODEK_BASE_URL=" + model.URL, "ODEK_MODEL=test-model", "ODEK_API_KEY=sk-test-key-0123456789abcdef",
		"ODEK_HOME=" + b.TempDir(), "ODEK_ARTIFACTS_DIR=" + b.TempDir()}
	out := &bintest.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if b.Failed() {
			b.Logf("odek-bot output:\n%s", out.String())
		}
	}()
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		drafts := len(tg.Drafts(1001))
		tg.UserMessage(1001, 1001, fmt.Sprintf("question %d", i))
		var t0 time.Time
		select {
		case t0 = <-first:
		case <-time.After(60 * time.Second):
			b.Fatal("no model request")
		}
		tg.Wait(b, 60*time.Second, "the first draft", func(s *bottest.Server) bool { return len(s.Drafts(1001)) > drafts })
		// The fake accepts every draft: this job's first is the one after
		// the earlier jobs'.
		lat = append(lat, tg.Calls("sendMessageDraft")[drafts].At.Sub(t0))
		release <- struct{}{}
		tg.Wait(b, 60*time.Second, "the answer", func(s *bottest.Server) bool { return answers(s) > i })
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// answers counts the answers visible in the benchmark's chat.
func answers(s *bottest.Server) int {
	n := 0
	for _, m := range s.Visible(1001) {
		if strings.HasPrefix(m, "Hello there, here is the answer.") {
			n++
		}
	}
	return n
}
