package bot

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/odekrun/odek/bot/tgclient"
)

func TestBucket(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := rate.NewLimiter(1, 3)
	var ok bool
	var wait time.Duration
	for i := range 3 {
		if ok, _ = takeAt(b, t0); !ok {
			t.Fatalf("take %d refused within burst", i)
		}
	}
	if ok, wait = takeAt(b, t0); ok || wait != time.Second {
		t.Fatalf("4th take: ok %v wait %v; want refused, 1s", ok, wait)
	}
	if ok, _ = takeAt(b, t0.Add(time.Second)); !ok {
		t.Fatal("refill after 1 s refused")
	}
}

func TestAccess(t *testing.T) {
	a := NewAccess([]int64{1}, []int64{-100}, false)
	tests := []struct {
		user, chat int64
		want       bool
	}{
		{1, 1, true}, {1, -5, true}, {2, -100, true}, {2, 2, false}, {0, 5, false}, {0, -100, true},
	}
	for _, tt := range tests {
		if got := a.Allows(tt.user, tt.chat); got != tt.want {
			t.Errorf("Allows(%d, %d) = %v", tt.user, tt.chat, got)
		}
	}
	if !NewAccess(nil, nil, true).Allows(42, 42) || (Access{}).Allows(1, 1) {
		t.Error("allow-all / zero Access")
	}
}

func TestParseIDs(t *testing.T) {
	ids, err := ParseIDs(" 12, -100345 ,,7")
	if err != nil || fmt.Sprint(ids) != "[12 -100345 7]" {
		t.Errorf("ParseIDs = %v, %v", ids, err)
	}
	if _, err := ParseIDs("12,@bob"); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "@bob") {
		t.Errorf("bad id: %v", err)
	}
}

func TestApprovalData(t *testing.T) {
	id := strings.Repeat("a1", 16)
	for _, allow := range []bool{true, false} {
		d := approvalData(id, allow)
		if len(d) > 64 {
			t.Fatalf("callback data %d bytes > 64", len(d))
		}
		gotID, gotAllow, ok := parseApprovalData(d)
		if !ok || gotID != id || gotAllow != allow {
			t.Errorf("round trip %q: %q %v %v", d, gotID, gotAllow, ok)
		}
	}
	for _, bad := range []string{"", "ap:", "ap::y", "ap:x:maybe", "xx:abc:y", "ap:a/b:y", "ap:" + strings.Repeat("a", 80) + ":y"} {
		if _, _, ok := parseApprovalData(bad); ok {
			t.Errorf("parseApprovalData(%q) accepted", bad)
		}
	}
}

func TestConfigDefaultsAndEndpoint(t *testing.T) {
	c := Config{APIEndpoint: "http://127.0.0.1:8081/"}.withDefaults()
	if c.APIEndpoint != "http://127.0.0.1:8081/bot%s/%s" || c.AgentTimeout != 900*time.Second || c.UserJobsPerMinute != 6 ||
		c.PollTimeout != 30*time.Second || c.MaxUploadBytes != MaxUploadBytes || c.GlobalRate != 25 {
		t.Errorf("defaults: %+v", c)
	}
	if got := (Config{}).withDefaults().APIEndpoint; got != DefaultAPIEndpoint {
		t.Errorf("default endpoint %q", got)
	}
}

func TestEditInterval(t *testing.T) {
	if editInterval(42, time.Second) != time.Second || editInterval(-100, time.Second) != 3*time.Second {
		t.Error("editInterval")
	}
}

// FuzzParseApprovalData: callback data comes from Telegram clients.
func FuzzParseApprovalData(f *testing.F) {
	f.Add("ap:0123abcd:y")
	f.Add("ap::n")
	f.Add("ap:\x00:y")
	f.Fuzz(func(t *testing.T, s string) {
		id, allow, ok := parseApprovalData(s)
		if ok && approvalData(id, allow) != s {
			t.Fatalf("accepted %q but it does not round-trip", s)
		}
	})
}

func TestBackoff(t *testing.T) {
	for attempt, want := range map[int]time.Duration{1: 500 * time.Millisecond, 2: time.Second, 3: 2 * time.Second, 10: 30 * time.Second} {
		if got := tgclient.Backoff(attempt, 30*time.Second); got != want {
			t.Errorf("backoff(%d) = %v, want %v", attempt, got, want)
		}
	}
}
