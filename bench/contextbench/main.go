// Command contextbench measures what a long conversation costs: it drives
// a chat of -messages messages through the real odek binary (`odek run
// --session`, then `odek continue` per message, as a worker continues a
// chat) against a scripted model served in-process. Every message makes
// two read_file calls of -result-bytes each, then answers; the model also
// answers the digest side call of a compaction, carrying the facts it was
// shown. Nothing is configured but the model id, so the run gets the
// default window of an unknown model (32768 tokens) and the default
// high/low water marks.
//
// It reports, per message, the request bytes of its first model call
// (first, median, last), the share of request bytes identical to the
// previous request's prefix (what a provider's prefix cache can serve),
// the compactions and their side-call tokens, whether a fact stated in
// message 1 is still in the request of the last message, and the
// estimated USD per message at message 10 and at the last one with the
// price table below (cached input at its own price). The scripted model
// reports as cached the tokens of the prefix its previous request shared.
//
//	go build -o /tmp/odek ./cmd/odek && go run ./bench/contextbench -odek /tmp/odek
//
// Targets (issue 29): last first-call bytes ≤ the high-water mark (0.8 ×
// 32768 tokens × 4 bytes); ≥ 90 % prefix-identical bytes; the fact of
// message 1 present at the last message; at most one compaction per 15
// messages. It exits 1 when a target is missed.
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
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/odekrun/odek/agent"
	"github.com/odekrun/odek/internal/llm"
	"github.com/odekrun/odek/internal/llm/llmtest"
)

// The documented price table (USD per million tokens): a mid-priced model
// whose cache serves input at a tenth of the price.
const (
	priceInput  = 1.00
	priceCached = 0.10
	priceOutput = 4.00
)

// fact is stated in message 1 (which stays verbatim as the conversation's
// goal); fact2 in message 2, whose turn is folded: it can reach the last
// message only through the digest.
const (
	fact  = "FACT: the launch code is 7491"
	fact2 = "FACT: the backup host is zephyr-7"
)

type call struct {
	message   int // 1-based message the call belongs to
	side      bool
	bytes     int
	prefix    int // bytes shared with the previous normal request
	usage     llm.Usage
	hasFact   bool
	hasFact2  bool
	firstCall bool
}

type recorder struct {
	mu      sync.Mutex
	message int
	prev    []byte
	calls   []call
	started bool // the current message's first call was seen
}

func (rc *recorder) handle(r llmtest.Recorded) llmtest.Turn {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	c := call{message: rc.message, bytes: len(r.Body), hasFact: bytes.Contains(r.Body, []byte("7491")),
		hasFact2: bytes.Contains(r.Body, []byte("zephyr-7"))}
	if len(r.Messages) > 0 && r.Messages[0].Content == agent.DigestPrompt {
		c.side = true
		var facts []string
		for _, line := range strings.Split(r.Messages[1].Content, "\n") {
			if i := strings.Index(line, "FACT"); i >= 0 {
				facts = append(facts, "- "+line[i:])
			}
		}
		text := "## Facts\n" + strings.Join(facts, "\n") + "\n## Open tasks\n- keep reading the daily notes\n" + strings.Repeat("- a remembered detail\n", 40)
		c.usage = llm.Usage{PromptTokens: len(r.Body) / 4, CompletionTokens: len(text) / 4}
		rc.calls = append(rc.calls, c)
		return llmtest.Turn{Content: text, Usage: &c.usage}
	}
	n := 0
	for n < len(rc.prev) && n < len(r.Body) && rc.prev[n] == r.Body[n] {
		n++
	}
	c.prefix = n
	if os.Getenv("CONTEXTBENCH_DEBUG") != "" && len(rc.prev) > 0 {
		fmt.Fprintf(os.Stderr, "msg %d bytes %d prefix %d prev %d at %.80q\n", rc.message, len(r.Body), n, len(rc.prev), r.Body[n:min(n+80, len(r.Body))])
	}
	rc.prev = append(rc.prev[:0], r.Body...)
	c.usage = llm.Usage{PromptTokens: len(r.Body) / 4, CachedTokens: n / 4}
	if !rc.started {
		c.firstCall, rc.started = true, true
		if dir := os.Getenv("CONTEXTBENCH_DUMP"); dir != "" {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("first-call-%03d.json", rc.message)), r.Body, 0o600)
		}
	}
	var turn llmtest.Turn
	if last := r.LastMessage(); last.Role == llm.RoleUser {
		turn = llmtest.Turn{ToolCalls: []llmtest.Call{
			{Name: "read_file", Arguments: `{"path":"a.txt"}`}, {Name: "read_file", Arguments: `{"path":"b.txt"}`}}}
		c.usage.CompletionTokens = 30
	} else {
		turn = llmtest.Turn{Content: "Noted message " + strconv.Itoa(rc.message) + "."}
		c.usage.CompletionTokens = 10
	}
	turn.Usage = &c.usage
	rc.calls = append(rc.calls, c)
	return turn
}

func (rc *recorder) next(m int) {
	rc.mu.Lock()
	rc.message, rc.started = m, false
	rc.mu.Unlock()
}

func cost(u llm.Usage) float64 {
	return (float64(u.PromptTokens-u.CachedTokens)*priceInput + float64(u.CachedTokens)*priceCached +
		float64(u.CompletionTokens)*priceOutput) / 1e6
}

func main() {
	bin := flag.String("odek", "odek", "path to the odek binary")
	messages := flag.Int("messages", 200, "messages in the conversation")
	resultBytes := flag.Int("result-bytes", 2048, "bytes each of the two read_file calls returns")
	viaWorker := flag.Bool("worker", false, "send each message as a job of one chat to a real `odek worker` over a real redis-server (as odek-bot does) instead of `odek continue`")
	switchAt := flag.Int("switch-at", 0, "with -worker: stop the first worker after this many messages and continue the chat on a second one (0: half the messages)")
	flag.Parse()

	work, _ := os.MkdirTemp("", "contextbench")
	defer os.RemoveAll(work)
	home := filepath.Join(work, "home")
	os.MkdirAll(home, 0o700)

	rc := &recorder{}
	h := llmtest.NewScriptHandler(rc.handle)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go http.Serve(ln, h)
	base := "http://" + ln.Addr().String() + "/v1"

	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "ODEK_HOME=" + home,
		"ODEK_BASE_URL=" + base, "ODEK_MODEL=bench-chat-model", "ODEK_API_KEY=sk-bench-0123456789"}
	// send runs one message of the conversation; files is where its two
	// files are written.
	var send func(m int, goal string) error
	files := work
	if *viaWorker {
		at := *switchAt
		if at <= 0 {
			at = *messages / 2
		}
		w, err := startWorkerChat(work, *bin, env, at)
		if err != nil {
			fmt.Fprintln(os.Stderr, "contextbench:", err)
			os.Exit(1)
		}
		defer w.close()
		send, files = w.send, w.chatDir
	} else {
		send = func(m int, goal string) error {
			args := []string{"continue", "--quiet", goal}
			if m == 1 {
				args = []string{"run", "--session", "--quiet", goal}
			}
			cmd := exec.Command(*bin, args...)
			cmd.Dir = work
			cmd.Env = env
			var se bytes.Buffer
			cmd.Stderr = &se
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("odek failed: %v\n%s", err, se.String())
			}
			return nil
		}
	}

	for m := 1; m <= *messages; m++ {
		// Each message reads files whose content is new.
		for _, f := range []string{"a.txt", "b.txt"} {
			line := fmt.Sprintf("daily note %d of %s: ", m, f)
			body := strings.Repeat(line, *resultBytes/len(line)+1)[:*resultBytes]
			os.WriteFile(filepath.Join(files, f), []byte(body), 0o644)
		}
		goal := fmt.Sprintf("message %d: read a.txt and b.txt and tell me what changed", m)
		switch m {
		case 1:
			goal = fact + ". " + goal
		case 2:
			goal = fact2 + ". " + goal
		}
		rc.next(m)
		if err := send(m, goal); err != nil {
			fmt.Fprintf(os.Stderr, "message %d: %v\n", m, err)
			os.Exit(1)
		}
	}
	if *viaWorker {
		at := *switchAt
		if at <= 0 {
			at = *messages / 2
		}
		fmt.Printf("variant=worker (jobs of chat %d, session %s, through redis-server; worker 1 for messages 1-%d, worker 2 after)\n", benchChat, benchSession, at)
	} else {
		fmt.Println("variant=binary (odek run --session, then odek continue per message)")
	}
	report(rc.calls, *messages)
}

func report(calls []call, messages int) {
	var first []int
	var lastFirst call
	var prefix, total, compactions, sideIn, sideOut int
	perMsg := make([]float64, messages+1)
	for _, c := range calls {
		perMsg[c.message] += cost(c.usage)
		if c.side {
			compactions++
			sideIn += c.usage.PromptTokens
			sideOut += c.usage.CompletionTokens
			continue
		}
		prefix += c.prefix
		total += c.bytes
		if c.firstCall {
			first = append(first, c.bytes)
			lastFirst = c
		}
	}
	sorted := append([]int(nil), first...)
	sort.Ints(sorted)
	share0, window := agent.DefaultContextShare, llm.DefaultContextWindow
	high := int(share0*float64(window)) * 4
	share := float64(prefix) / float64(total)
	fmt.Printf("messages=%d window=%d tokens (default) high_water=%d bytes\n", messages, llm.DefaultContextWindow, high)
	fmt.Printf("first_call_request_bytes first=%d median=%d last=%d max=%d\n", first[0], sorted[len(sorted)/2], first[len(first)-1], sorted[len(sorted)-1])
	fmt.Printf("prefix_identical_share=%.1f%%\n", 100*share)
	fmt.Printf("compactions=%d (one per %.1f messages) side_call_tokens input=%d output=%d\n", compactions, float64(messages)/max(float64(compactions), 1), sideIn, sideOut)
	fmt.Printf("fact_of_message_1_at_message_%d=%v fact_of_message_2_at_message_%d=%v (through the digest)\n", messages, lastFirst.hasFact, messages, lastFirst.hasFact2)
	at10 := 10
	if messages < 10 {
		at10 = messages
	}
	fmt.Printf("usd_per_message at_10=%.5f at_%d=%.5f (input $%.2f, cached $%.2f, output $%.2f per million tokens)\n",
		perMsg[at10], messages, perMsg[messages], priceInput, priceCached, priceOutput)
	ok := true
	check := func(name string, pass bool) {
		if !pass {
			fmt.Println("MISSED:", name)
			ok = false
		}
	}
	check("last first-call request ≤ the high-water mark", first[len(first)-1] <= high)
	check("≥ 90% prefix-identical bytes", share >= 0.90)
	check("fact of message 1 present at the last message", lastFirst.hasFact)
	check("fact of message 2 present at the last message (digest)", lastFirst.hasFact2)
	check("≤ 1 compaction per 15 messages", compactions*15 <= messages)
	if !ok {
		os.Exit(1)
	}
}
