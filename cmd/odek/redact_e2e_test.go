package main_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/internal/llm/llmtest"
	"github.com/odekrun/odek/queue"
)

// The worker's model key (what odekCmd sets as ODEK_API_KEY), echoed by the
// model in its streamed answer and in a tool call, split across stream
// chunks: the job's result, its progress stream (the streamed answer's
// odek.delta/v1 entries) and the chat's saved session must all carry the
// mask. Nothing in Redis may hold the key afterwards: the compose bot,
// which is given no model key, reads all of it.
func TestWorkerNeverLeavesItsKeyInRedis(t *testing.T) {
	const key = "sk-test-key-0123456789abcdef"
	srv := llmtest.New(t,
		llmtest.CallTools(llmtest.Call{ID: "c1", Name: "write_file", Arguments: `{"path":"k.txt","content":"` + key + `"}`}),
		llmtest.Turn{Content: "Your key is " + key + ", as you asked.", ChunkSize: 5},
	)
	e := newQueueEnv(t, srv.URL, false, 5*time.Second, 3)
	e.startWorker("w1", "--artifacts", t.TempDir())
	j := e.enqueue(queue.Job{ChatID: 7, UserID: 7, Goal: "tell me my key", IdempotencyKey: "k1", SessionID: "chat-7"})
	res := e.results(60*time.Second, j.ID)[j.ID]
	if res.Status != queue.StatusSucceeded || strings.Contains(res.Answer, key) || !strings.Contains(res.Answer, "[REDACTED]") {
		t.Fatalf("result %+v", res)
	}
	ps, err := e.q.ReadProgress(context.Background(), j.ID, "", 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	var streamed strings.Builder
	for _, p := range ps {
		if strings.Contains(string(p.Data), queue.DeltaSchema) {
			streamed.Write(p.Data)
		}
	}
	if !strings.Contains(streamed.String(), "[REDACTED]") {
		t.Fatalf("no streamed answer with the mask in the progress stream: %q", streamed.String())
	}
	ctx := context.Background()
	rdb := e.srv.Client()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	sawSession := false
	for _, k := range keys {
		var dump string
		switch typ := rdb.Type(ctx, k).Val(); typ {
		case "string":
			dump = rdb.Get(ctx, k).Val()
		case "hash":
			dump = strings.Join(rdb.HVals(ctx, k).Val(), "\n")
		case "list":
			dump = strings.Join(rdb.LRange(ctx, k, 0, -1).Val(), "\n")
		case "set":
			dump = strings.Join(rdb.SMembers(ctx, k).Val(), "\n")
		case "zset":
			dump = strings.Join(rdb.ZRange(ctx, k, 0, -1).Val(), "\n")
		case "stream":
			var b strings.Builder
			for _, m := range rdb.XRange(ctx, k, "-", "+").Val() {
				for _, v := range m.Values {
					b.WriteString(strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(fmtAny(v), "\n", " "), "\r", " ")))
					b.WriteByte('\n')
				}
			}
			dump = b.String()
		default:
			t.Fatalf("key %s of type %s not inspected", k, typ)
		}
		if strings.Contains(dump, key) {
			t.Errorf("Redis key %s (%s) holds the worker's model key", k, rdb.Type(ctx, k).Val())
		}
		if strings.HasPrefix(k, "odek:session:") && strings.Contains(dump, "[REDACTED]") {
			sawSession = true
		}
	}
	if !sawSession {
		t.Errorf("no saved session with the mask among %d keys: %v", len(keys), keys)
	}
}

func fmtAny(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}
