package agent

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// msgsOf builds a transcript from a compact notation: "s" system, "u"
// user, "a" assistant, "c2" an assistant calling two tools followed by
// their two results, "d" a digest; each of size bytes of content.
func msgsOf(spec string, size int) []Message {
	var out []Message
	for i, tok := range strings.Fields(spec) {
		body := strings.Repeat(string(rune('a'+i%26)), size)
		switch tok[0] {
		case 's':
			out = append(out, Message{Role: RoleSystem, Content: "sys"})
		case 'u':
			if i == 1 {
				out = append(out, Message{Role: RoleUser, Content: "goal"})
				continue
			}
			out = append(out, Message{Role: RoleUser, Content: "u" + strconv.Itoa(i) + body})
		case 'a':
			out = append(out, Message{Role: RoleAssistant, Content: body})
		case 'd':
			out = append(out, digestMessage("old digest "+body))
		case 'c':
			n, _ := strconv.Atoi(tok[1:])
			a := Message{Role: RoleAssistant}
			var res []Message
			for k := range n {
				id := "m" + strconv.Itoa(i) + "c" + strconv.Itoa(k)
				a.ToolCalls = append(a.ToolCalls, ToolCall{ID: id, Type: "function", Function: FunctionCall{Name: "t", Arguments: "{}"}})
				res = append(res, Message{Role: RoleTool, ToolCallID: id, Content: body})
			}
			out = append(append(out, a), res...)
		}
	}
	return out
}

func TestPlanCompaction(t *testing.T) {
	tests := []struct {
		name      string
		spec      string
		size      int
		high, low int
		keep      int
		ok        bool
		want      compactPlan // only the index fields are compared
	}{
		{name: "under the high-water mark", spec: "s u c1 a", size: 400, high: 10_000, low: 5000, keep: 2},
		{name: "no window", spec: "s u c1 a", size: 400, high: 0, low: 0, keep: 2},
		{name: "folds oldest groups to the low mark", spec: "s u c1 a u c1 a", size: 4000, high: 5000, low: 3500, keep: 2, ok: true,
			// head 2; groups at 2(c1: 2..4), 4(a), 5(u), 6(c1), 8(a); each tool group ~2000 tokens
			want: compactPlan{head: 2, digest: -1, from: 2, cut: 6, lastUser: 5}},
		{name: "an old digest is folded", spec: "s u d c1 a u a", size: 4000, high: 4000, low: 3000, keep: 2, ok: true,
			// groups after the digest: c1 (3..4), a (5), u (6), a (7); the newest two stay
			want: compactPlan{head: 2, digest: 2, from: 3, cut: 6, lastUser: -1}},
		{name: "keeps the newest groups even above the low mark", spec: "s u c3 c3", size: 8000, high: 1000, low: 100, keep: 1, ok: true,
			want: compactPlan{head: 2, digest: -1, from: 2, cut: 6, lastUser: -1}},
		{name: "nothing foldable", spec: "s u c3", size: 8000, high: 1000, low: 100, keep: 2},
		{name: "the current user message stays when its group is folded", spec: "s u a u c1 c1 c1", size: 4000, high: 3000, low: 2000, keep: 1, ok: true,
			// groups a, u, c1, c1, c1: four may go; the folded user message is kept
			want: compactPlan{head: 2, digest: -1, from: 2, cut: 8, lastUser: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := msgsOf(tt.spec, tt.size)
			p, ok := planCompaction(msgs, tt.high, tt.low, tt.keep)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (estimate %d)", ok, tt.ok, estimateAll(msgs))
			}
			if !ok {
				return
			}
			got := compactPlan{head: p.head, digest: p.digest, from: p.from, cut: p.cut, lastUser: p.lastUser}
			if got != tt.want {
				t.Errorf("plan = %+v, want %+v (estimates: %d total, low %d)", got, tt.want, estimateAll(msgs), tt.low)
			}
			out := p.apply(msgs, digestMessage("new"))
			checkPaired(t, out)
			if !IsDigest(&out[p.head]) || out[p.head].Content != DigestMarker+"\nnew" {
				t.Errorf("the digest is not right after the head: %+v", out[p.head])
			}
			if p.after > tt.low && p.folded < len(groupStarts(msgs, p.from))-tt.keep {
				t.Errorf("after %d > low %d with groups left to fold", p.after, tt.low)
			}
		})
	}
}

// checkCompaction is the compaction's invariant over any transcript: the
// head and the kept tail keep their bytes, every tool call keeps its
// results, the digest sits right after the head, and the current user
// message survives.
func checkCompaction(t *testing.T, msgs []Message, high, low, keep int) {
	t.Helper()
	p, ok := planCompaction(msgs, high, low, keep)
	if !ok {
		return
	}
	for _, out := range [][]Message{p.apply(msgs, digestMessage("d")), p.applyTrim(msgs)} {
		checkPaired(t, out)
		enc := func(m Message) []byte { b, _ := json.Marshal(m); return b }
		for i := 0; i < p.head; i++ {
			if !bytes.Equal(enc(out[i]), enc(msgs[i])) {
				t.Fatalf("head message %d changed", i)
			}
		}
		tail := msgs[p.cut:]
		got := out[len(out)-len(tail):]
		for i := range tail {
			if !bytes.Equal(enc(got[i]), enc(tail[i])) {
				t.Fatalf("kept message %d changed its bytes", p.cut+i)
			}
		}
		last := -1
		for i := len(msgs) - 1; i >= p.head; i-- {
			if msgs[i].Role == RoleUser {
				last = i
				break
			}
		}
		if last >= 0 {
			found := false
			for _, m := range out {
				if m.Role == RoleUser && m.Content == msgs[last].Content {
					found = true
				}
			}
			if !found {
				t.Fatal("the current user message was folded away")
			}
		}
	}
}

func TestCompactionInvariantRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 1))
	for range 300 {
		msgs := randomTranscript(r)
		high := 1000 + r.IntN(40000)
		checkCompaction(t, msgs, high, high/2, 1+r.IntN(3))
	}
}

// FuzzCompactionPlan: whatever the transcript, a tool call never loses its
// result and the messages a compaction keeps keep their bytes.
func FuzzCompactionPlan(f *testing.F) {
	f.Add([]byte("s u c1 a u c2 a"), uint16(4000), uint16(1000), uint8(2))
	f.Add([]byte("s u d c3 u a c1"), uint16(200), uint16(50), uint8(1))
	f.Add([]byte("s u"), uint16(1), uint16(0), uint8(0))
	f.Fuzz(func(t *testing.T, spec []byte, high, size uint16, keep uint8) {
		// Each byte picks a message kind; the rest of the transcript is
		// built as msgsOf does.
		kinds := []string{"u", "a", "c1", "c2", "c3", "d"}
		toks := []string{"s", "u"}
		for _, b := range spec {
			if len(toks) > 200 {
				break
			}
			toks = append(toks, kinds[int(b)%len(kinds)])
		}
		msgs := msgsOf(strings.Join(toks, " "), int(size)%5000)
		checkCompaction(t, msgs, int(high), int(high)/2, int(keep)%4)
	})
}
