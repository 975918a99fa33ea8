package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/odekrun/odek/agent"
)

func TestDecide(t *testing.T) {
	def := DefaultPolicy()
	want := map[Class]Action{
		ClassSafe: ActionAllow, ClassLocalWrite: ActionAllow, ClassDestructive: ActionDeny,
		ClassBlocked: ActionDeny, ClassUnknown: ActionDeny, ClassSystemWrite: ActionPrompt,
		ClassInstall: ActionPrompt, ClassCodeExecution: ActionPrompt, ClassNetworkEgress: ActionPrompt,
	}
	for c, a := range want {
		if got := def.Decide(c); got != a {
			t.Errorf("DefaultPolicy().Decide(%s) = %s, want %s", c, got, a)
		}
		if got := (Policy{}).Decide(c); got != a {
			t.Errorf("Policy{}.Decide(%s) = %s, want the default %s", c, got, a)
		}
	}
	if def.NonInteractive != ActionDeny {
		t.Errorf("DefaultPolicy().NonInteractive = %s", def.NonInteractive)
	}
	p := Policy{Classes: map[Class]Action{ClassBlocked: ActionAllow, ClassInstall: ActionAllow, ClassSafe: "maybe"}}
	for _, tc := range []struct {
		c    Class
		want Action
	}{
		{ClassBlocked, ActionDeny},         // never overridable
		{ClassInstall, ActionAllow},        // override
		{ClassDestructive, ActionDeny},     // missing ⇒ default
		{ClassNetworkEgress, ActionPrompt}, // missing ⇒ default
		{ClassSafe, ActionDeny},            // invalid action fails closed
		{"bogus", ActionDeny},              // unknown class fails closed
	} {
		if got := p.Decide(tc.c); got != tc.want {
			t.Errorf("Decide(%s) = %s, want %s", tc.c, got, tc.want)
		}
	}
}

func TestAuthorize(t *testing.T) {
	yes := PrompterFunc(func(ctx context.Context, q string) (bool, error) { return true, nil })
	no := PrompterFunc(func(ctx context.Context, q string) (bool, error) { return false, nil })
	broken := PrompterFunc(func(ctx context.Context, q string) (bool, error) { return true, errors.New("tty gone") })
	expired := PrompterFunc(func(ctx context.Context, q string) (bool, error) {
		return false, fmt.Errorf("%w (after 30m0s)", agent.ErrNoAnswer)
	})
	a := func(c Class) Assessment {
		return Assessment{Class: c, Summary: map[string]any{"argv0": "x", "class": string(c)}}
	}
	allowNI := DefaultPolicy()
	allowNI.NonInteractive = ActionAllow
	allowBlocked := Policy{Classes: map[Class]Action{ClassBlocked: ActionAllow}}
	tests := []struct {
		name  string
		p     Policy
		pr    Prompter
		c     Class
		allow bool
		subs  []string
	}{
		{"safe allowed", DefaultPolicy(), nil, ClassSafe, true, []string{"dangerous.classes.safe"}},
		{"destructive denied", DefaultPolicy(), yes, ClassDestructive, false, []string{"destructive", "dangerous.classes.destructive"}},
		{"prompt yes", DefaultPolicy(), yes, ClassInstall, true, []string{"install", "confirmed"}},
		{"prompt no", DefaultPolicy(), no, ClassInstall, false, []string{"declined", "dangerous.classes.install"}},
		{"prompt error", DefaultPolicy(), broken, ClassInstall, false, []string{"tty gone"}},
		{"prompt expired", DefaultPolicy(), expired, ClassInstall, false, []string{"nobody answered in time", "after 30m0s", "dangerous.classes.install"}},
		{"no prompter denies", DefaultPolicy(), nil, ClassCodeExecution, false, []string{"dangerous.classes.code_execution", "non_interactive"}},
		{"no prompter, non_interactive allow", allowNI, nil, ClassCodeExecution, true, []string{"code_execution"}},
		{"blocked never allowed", allowBlocked, yes, ClassBlocked, false, []string{"blocked", "dangerous.classes.blocked"}},
		{"bogus class denied", allowNI, yes, "bogus", false, []string{"bogus"}},
	}
	for _, tt := range tests {
		ok, reason := Authorize(context.Background(), tt.p, tt.pr, "shell", a(tt.c))
		if ok != tt.allow {
			t.Errorf("%s: allowed = %v, want %v (%s)", tt.name, ok, tt.allow, reason)
		}
		for _, s := range append(tt.subs, "shell") {
			if !strings.Contains(reason, s) {
				t.Errorf("%s: reason %q lacks %q", tt.name, reason, s)
			}
		}
	}
	var asked string
	rec := PrompterFunc(func(ctx context.Context, q string) (bool, error) { asked = q; return false, nil })
	Authorize(context.Background(), DefaultPolicy(), rec, "shell", Assessment{Class: ClassInstall, Summary: map[string]any{"argv0": "pip", "class": "install"}})
	if !strings.Contains(asked, "shell") || !strings.Contains(asked, "argv0=pip") || !strings.HasSuffix(asked, "[y/N] ") {
		t.Errorf("question = %q", asked)
	}
}

func TestConfirmOnPipe(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{{"y\n", true}, {"YES\n", true}, {" y \n", true}, {"\n", false}, {"n\n", false}, {"yep\n", false}, {strings.Repeat("y", 200) + "\n", false}} {
		p := newPipeTTY(t)
		p.answer.WriteString(tc.in)
		got, err := confirmOn(context.Background(), p, "q? ")
		if err != nil || got != tc.want {
			t.Errorf("answer %q: got %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	// End of input without an answer is an error, so the call is denied.
	p := newPipeTTY(t)
	p.answer.Close()
	if ok, err := confirmOn(context.Background(), p, "q? "); ok || err == nil {
		t.Errorf("EOF: got %v, %v; want false and an error", ok, err)
	}

	// A cancelled context interrupts a read that would block forever.
	p = newPipeTTY(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := confirmOn(ctx, p, "q? "); done <- err }()
	buf := make([]byte, 3)
	if _, err := p.question.Read(buf); err != nil || string(buf) != "q? " {
		t.Fatalf("question read %q, %v", buf, err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled confirm err = %v, want context.Canceled", err)
	}
}

// pipeTTY stands in for /dev/tty: the prompt reads answers from one pipe
// and writes questions to another.
type pipeTTY struct {
	in, out          *os.File // the prompter's side
	answer, question *os.File // the test's side
}

func newPipeTTY(t *testing.T) *pipeTTY {
	ir, iw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	or, ow, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ir.Close(); iw.Close(); or.Close(); ow.Close() })
	return &pipeTTY{in: ir, out: ow, answer: iw, question: or}
}

func (p *pipeTTY) Read(b []byte) (int, error)        { return p.in.Read(b) }
func (p *pipeTTY) Write(b []byte) (int, error)       { return p.out.Write(b) }
func (p *pipeTTY) SetReadDeadline(t time.Time) error { return p.in.SetReadDeadline(t) }

func TestClip(t *testing.T) {
	s := strings.Repeat("a", 50) + strings.Repeat("é", 100) + strings.Repeat("z", 50)
	for _, max := range []int{-1, 0, 1, 10, 63, 64, 65, 100, 199, len(s) - 1, len(s), len(s) + 10} {
		got := Clip(s, max)
		if max >= len(s) && got != s {
			t.Errorf("Clip(s, %d) changed a short string", max)
		}
		if max >= 64 && len(got) > max {
			t.Errorf("Clip(s, %d) = %d bytes", max, len(got))
		}
		if max < 64 && len(got) > max && max >= 0 {
			t.Errorf("Clip(s, %d) = %d bytes", max, len(got))
		}
		if !utf8.ValidString(got) {
			t.Errorf("Clip(s, %d) split a rune: %q", max, got)
		}
		if max >= 64 && max < len(s) {
			if !strings.HasPrefix(got, "aaa") || !strings.HasSuffix(got, "zzz") || !strings.Contains(got, " bytes omitted ...]") {
				t.Errorf("Clip(s, %d) = %q lacks head, tail or marker", max, got)
			}
		}
	}
	got := Clip(strings.Repeat("x", 1000), 100)
	head := strings.Index(got, "\n[")
	tail := len(got) - strings.LastIndex(got, "]\n") - 2
	omitted := 1000 - head - tail
	if !strings.Contains(got, "[... "+itoa(omitted)+" bytes omitted ...]") {
		t.Errorf("marker count wrong: %q (head %d tail %d)", got, head, tail)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func FuzzClip(f *testing.F) {
	f.Add("hello world", 5)
	f.Add(strings.Repeat("日本語", 100), 64)
	f.Add(strings.Repeat("x", 500), 100)
	f.Add("\xff\xfe\x80\x80\x80\x80abc", 64)
	f.Fuzz(func(t *testing.T, s string, max int) {
		got := Clip(s, max)
		if len(s) <= max {
			if got != s {
				t.Fatalf("short string changed")
			}
			return
		}
		if len(got) > max && max >= 0 {
			t.Fatalf("Clip(%d bytes, %d) = %d bytes", len(s), max, len(got))
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Clip split a rune: %q", got)
		}
		if max >= 64 && !strings.Contains(got, " bytes omitted ...]") {
			t.Fatalf("Clip(%d bytes, %d) has no marker", len(s), max)
		}
	})
}

func TestValidateToolName(t *testing.T) {
	for _, name := range []string{"", "has space", strings.Repeat("x", 65), "dot.name", "ünï"} {
		if err := ValidateToolName(name); !errors.Is(err, ErrInvalidToolName) {
			t.Errorf("ValidateToolName(%q) = %v, want ErrInvalidToolName", name, err)
		}
	}
	for _, name := range []string{"a", "srv__tool", "x-y_Z9", strings.Repeat("x", 64)} {
		if err := ValidateToolName(name); err != nil {
			t.Errorf("ValidateToolName(%q) = %v", name, err)
		}
	}
}
