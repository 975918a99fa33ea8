package bot

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/odekrun/odek/bot/bottest"
	"github.com/odekrun/odek/queue"
)

const budGroup = int64(-100777)

// A user's daily cap refuses the next request once spent, says when it
// resets (in the user's language), and holds across the user's chats:
// the spend of a private chat counts in a group too. Each job carries
// what the user has left as its cap.
func TestUserBudgetRefusesAcrossChatsAndSaysWhenItResets(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) {
		c.UserBudget = queue.Caps{DayTokens: 500}
		c.AllowedChats = []int64{budGroup}
		c.UserJobsPerMinute = -1
	})
	var mu sync.Mutex
	var caps []int
	worker(t, q, func(_ context.Context, l queue.Lease) queue.Result {
		mu.Lock()
		caps = append(caps, l.Job.Budget.MaxTotalTokens)
		mu.Unlock()
		return queue.Result{Answer: "done: " + l.Job.Goal, Usage: queue.Usage{PromptTokens: 500, CompletionTokens: 100}}
	})
	h.tg.UserMessage(alice, alice, "first")
	h.waitVisible(alice, "done: first")
	h.tg.UserMessage(alice, alice, "second")
	h.waitVisible(alice, "You have used your daily budget of 500 tokens. It resets at 00:00 UTC (in ")
	// The same user in a group: the same account, refused in German.
	h.tg.Send(bottest.Incoming{Chat: budGroup, User: alice, Text: "@" + bottest.BotUsername + " third", Lang: "de"})
	h.waitVisible(budGroup, "Du hast dein tägliches Budget von 500 Tokens verbraucht. Es wird um 00:00 UTC zurückgesetzt")
	// Bob's budget is his own.
	h.tg.UserMessage(bob, bob, "bob's")
	h.waitVisible(bob, "done: bob's")
	mu.Lock()
	defer mu.Unlock()
	if len(caps) != 2 || caps[0] != 500 || caps[1] != 500 {
		t.Fatalf("job caps = %v, want [500 500]: each user's whole day", caps)
	}
}

// The guest pool (opt-in) lets group members the allowlist does not name
// use the bot in groups, all charged to one shared account; without it
// they are refused as before, and a guest in a private chat always is.
func TestGuestPool(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) {
		c.GuestBudget = &queue.Caps{DayTokens: 100}
		c.UserJobsPerMinute = -1
	})
	worker(t, q, func(_ context.Context, l queue.Lease) queue.Result {
		return queue.Result{Answer: "done: " + l.Job.Goal, Usage: queue.Usage{PromptTokens: 90, CompletionTokens: 20}}
	})
	h.tg.Send(bottest.Incoming{Chat: budGroup, User: eve, Text: "@" + bottest.BotUsername + " guest job"})
	h.waitVisible(budGroup, "done: guest job")
	// Another guest draws on the same, now spent, pool.
	h.tg.Send(bottest.Incoming{Chat: budGroup, User: eve + 1, Text: "@" + bottest.BotUsername + " again"})
	h.waitVisible(budGroup, "Guests of this bot have used their shared daily budget of 100 tokens")
	h.tg.UserMessage(eve, eve, "private")
	h.waitVisible(eve, "You are not allowed to use this bot")
	u, err := q.BudgetUsage(context.Background(), queue.GuestAccount, h.bot.cfg.Now())
	if err != nil || u.Today(h.bot.cfg.Now()).Tokens != 110 {
		t.Fatalf("guest pool = %+v, %v: want the guest job's 110 tokens", u, err)
	}
	if uu, _ := q.BudgetUsage(context.Background(), queue.UserAccount(eve), h.bot.cfg.Now()); len(uu.Days) != 0 {
		t.Fatalf("the guest's own account was charged: %+v", uu)
	}
}

func TestNoGuestPoolRefusesGroupStrangers(t *testing.T) {
	h := startBot(t, nil, nil)
	h.tg.Send(bottest.Incoming{Chat: budGroup, User: eve, Text: "@" + bottest.BotUsername + " hello"})
	h.waitVisible(budGroup, "You are not allowed to use this bot")
}

// /usage shows the user's own day and month with the cache share and the
// caps; /usage all lists every account for an admin in a private chat
// only; the metrics carry a hash of the user id, never the id.
func TestUsagePerUserAndForAdmins(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) {
		c.UserBudget = queue.Caps{DayTokens: 100000, MonthUSD: 20}
		c.Admins = []int64{alice}
		c.AllowedChats = []int64{budGroup}
		c.UserJobsPerMinute = -1
	})
	worker(t, q, func(_ context.Context, l queue.Lease) queue.Result {
		return queue.Result{Answer: "done: " + l.Job.Goal, Usage: queue.Usage{PromptTokens: 1000, CachedTokens: 400, CompletionTokens: 234, CostUSD: 0.0125}}
	})
	h.tg.UserMessage(bob, bob, "work")
	h.waitVisible(bob, "done: work")
	h.tg.UserMessage(bob, bob, "/usage")
	h.waitVisible(bob, "You, today (UTC): 1,234 tokens, $0.0125, 400 input tokens from the prompt cache (40 %), 1 job(s)")
	h.waitVisible(bob, "Your caps: 100,000 tokens a day, $20.00 a month.")
	h.tg.UserMessage(bob, bob, "/usage all")
	h.waitVisible(bob, "Only the bot's admins")
	h.tg.Send(bottest.Incoming{Chat: budGroup, User: alice, Text: "/usage all"})
	h.waitVisible(budGroup, "Only the bot's admins")
	h.tg.UserMessage(alice, alice, "/usage all")
	hash := h.bot.userLabel(queue.UserAccount(bob))
	h.waitVisible(alice, "user:"+strconv.FormatInt(bob, 10)+" (#"+hash+"): today 1,234 tokens")
	rec := httptest.NewRecorder()
	h.bot.HealthHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	if !strings.Contains(body, `odek_bot_user_tokens_total{user="`+hash+`"} 1234`) {
		t.Errorf("no per-user token series for bob's hash in /metrics:\n%s", grepLines(body, "odek_bot_user"))
	}
	if strings.Contains(body, strconv.FormatInt(bob, 10)) {
		t.Errorf("bob's raw user id is in /metrics")
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A message that finds the user's budget held by their running job in
// another chat waits and runs when that job's spend is settled, with
// what is left as its cap.
func TestHeldByTheUsersJobElsewhereWaits(t *testing.T) {
	q := queue.NewMemory(queue.Options{})
	h := startBot(t, q, func(c *Config) {
		c.UserBudget = queue.Caps{DayTokens: 1000}
		c.AllowedChats = []int64{budGroup}
		c.UserJobsPerMinute = -1
	})
	release := make(chan struct{})
	var mu sync.Mutex
	var caps []int
	worker(t, q, func(ctx context.Context, l queue.Lease) queue.Result {
		mu.Lock()
		caps = append(caps, l.Job.Budget.MaxTotalTokens)
		mu.Unlock()
		if strings.Contains(l.Job.Goal, "long") {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return queue.Result{Answer: "done: " + l.Job.Goal, Usage: queue.Usage{PromptTokens: 300}}
	})
	h.tg.UserMessage(alice, alice, "long")
	h.tg.Wait(t, wait, "the long job running", func(*bottest.Server) bool { mu.Lock(); defer mu.Unlock(); return len(caps) == 1 })
	h.tg.Send(bottest.Incoming{Chat: budGroup, User: alice, Text: "@" + bottest.BotUsername + " short"})
	h.waitVisible(budGroup, "Queued")
	close(release)
	h.waitVisible(budGroup, "done: short")
	mu.Lock()
	defer mu.Unlock()
	if len(caps) != 2 || caps[0] != 1000 || caps[1] != 700 {
		t.Fatalf("caps = %v, want [1000 700]", caps)
	}
}

func TestParseCaps(t *testing.T) {
	c, err := ParseCaps("day_tokens=200000, month_usd=20.5")
	if err != nil || c.DayTokens != 200000 || c.MonthUSD != 20.5 {
		t.Fatalf("ParseCaps = %+v, %v", c, err)
	}
	for _, bad := range []string{"day_tokens", "weekly_tokens=5", "day_usd=-3", "day_usd=x"} {
		if _, err := ParseCaps(bad); err == nil || !strings.Contains(err.Error(), strings.SplitN(bad, "=", 2)[0]) {
			t.Errorf("ParseCaps(%q) = %v, want an error naming the item", bad, err)
		}
	}
	m, err := ParseUserCaps("1001:day_tokens=5;1002:day_usd=none")
	if err != nil || m[1001].DayTokens != 5 || m[1002].DayUSD != -1 {
		t.Fatalf("ParseUserCaps = %+v, %v", m, err)
	}
	if _, err := ParseUserCaps("alice:day_tokens=5"); err == nil {
		t.Fatal("a non-numeric user id was accepted")
	}
}

func FuzzParseUserCaps(f *testing.F) {
	for _, s := range []string{"1001:day_tokens=5;1002:day_usd=none", "", ";;", "1:", "x:y=z", "1:day_tokens=1e300"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseUserCaps(s)
		if err != nil {
			return
		}
		for _, c := range m {
			d := queue.Caps{}.Over(c)
			if d.DayTokens < 0 || d.MonthTokens < 0 || d.DayUSD < 0 || d.MonthUSD < 0 {
				t.Fatalf("caps %+v from %q go negative", d, s)
			}
		}
	})
}
