package compose

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// sentinelFiles is how docs/DEPLOY.md brings up the Sentinel topology.
var sentinelFiles = []string{"docker-compose.yml", "docker-compose.sentinel.yml"}

// checkSentinel switches the running instance to the Sentinel topology of
// docker-compose.sentinel.yml (`docker compose -f docker-compose.yml -f
// docker-compose.sentinel.yml up -d`: the same Redis volume, a replica,
// three sentinels, bot and workers recreated with the redis+sentinel://
// REDIS_URL), then SIGKILLs the master container while a job waits on the
// model. The sentinels must promote the replica; the held job's answer,
// written while there is no master, and a job enqueued right after the
// kill must each be answered exactly once, with the session intact; when
// the old master comes back the sentinels must make it a replica.
func (e *env) checkSentinel(t *testing.T) {
	// The overlay gives the project network a fixed subnet (the Redis
	// nodes have fixed addresses): an existing instance is stopped first,
	// as docs/DEPLOY.md says; the volumes stay.
	e.timed("docker compose down", func() { e.compose("down") })
	e.files = sentinelFiles
	e.services = map[string]int{"redis": 1, "redis-replica": 1, "sentinel-1": 1, "sentinel-2": 1, "sentinel-3": 1, "bot": 1}
	began := time.Now()
	e.timed("docker compose -f docker-compose.yml -f docker-compose.sentinel.yml up -d --scale worker=3", func() {
		e.compose("up", "-d", "--scale", "worker=3")
	})
	e.timed("sentinel topology healthy", func() { e.waitHealthy(3) })

	master, replica := e.ids("redis")[0], e.ids("redis-replica")[0]
	masterIP, replicaIP := e.containerIP(t, master), e.containerIP(t, replica)
	t.Logf("master redis %s (%s), replica redis-replica %s (%s)", master[:12], masterIP, replica[:12], replicaIP)

	// Every worker reaches the master through the sentinels and sees its
	// replica.
	e.waitWorkersSee(t, "sentinel mode, master "+masterIP+", one replica", func(h redisHealth) bool {
		return h.Mode == "sentinel" && h.Master == masterIP+":6379" && len(h.Replicas) == 1
	})
	// odek doctor reads the same REDIS_URL in a worker container.
	out, _ := e.dockerErr("exec", e.ids("worker")[0], "odek", "doctor")
	if !strings.Contains(out, "sentinel mode, master "+masterIP+":6379") || !strings.Contains(out, "replicas ["+replicaIP+":6379]") {
		t.Errorf("odek doctor in a worker does not report Sentinel mode with master %s and replica %s:\n%s", masterIP, replicaIP, out)
	}
	// The switch kept Redis' volume: the conversation of the single-node
	// phase is in the session the model is sent (when that phase ran: not
	// with -run TestCompose/sentinel).
	singleNode := e.count("compose says hello") > 0
	e.tg.UserMessage(user, user, "sentinel remembers")
	if m := e.waitReply(t, "sentinel "); singleNode && !strings.Contains(plain(m.Text), "sentinel kept the session") {
		t.Errorf("after the switch to Sentinel: %q", m.Text)
	}

	// ---- the failover ----
	ev := e.watchSentinels(t, "sentinel-1", "sentinel-2", "sentinel-3")
	errsBefore := e.count("❌") // the bot's error replies (a failed enqueue: "❌ Could not queue …")
	e.tg.UserMessage(user, user, "ride out a failover")
	ip := e.llm.waitArrival(t, "ride out a failover")
	t.Logf("the held job runs on worker %s; killing the master", ip)
	killed := time.Now()
	e.docker(t, "kill", master)
	// The held job's answer is written back while there is no master, and
	// a new message is enqueued by the bot meanwhile.
	e.llm.release("ride out a failover")
	e.tg.UserMessage(user, user, "after the failover")

	sdown := ev.wait(t, "+sdown", "master odek ", killed)
	odown := ev.wait(t, "+odown", "master odek ", killed)
	sw := ev.wait(t, "+switch-master", "odek ", killed)
	if f := strings.Fields(sw.payload); len(f) != 5 || f[3] != replicaIP || f[4] != "6379" {
		t.Errorf("+switch-master %q: want the new master %s 6379", sw.payload, replicaIP)
	}
	e.waitReply(t, "rode out the failover")
	heldAt := time.Now()
	after := e.waitReply(t, "answered after the failover")
	afterAt := time.Now()
	if !strings.Contains(plain(after.Text), "history kept") {
		t.Errorf("the job after the failover: %q (the session lost the turn answered across it)", after.Text)
	}
	claim := e.llm.firstCall("after the failover")
	e.barrier(t)
	for _, s := range []string{"rode out the failover", "answered after the failover"} {
		if n := e.count(s); n != 1 {
			t.Errorf("%q answered %d times, want exactly once: %q", s, n, e.tg.Visible(user))
		}
	}
	if e.count("❌") != errsBefore {
		t.Errorf("the chat shows an error across the failover: %q", e.tg.Visible(user))
	}
	e.waitWorkersSee(t, "master "+replicaIP+" after the failover, failovers_seen ≥ 1", func(h redisHealth) bool {
		return h.Mode == "sentinel" && h.Master == replicaIP+":6379" && h.FailoversSeen >= 1
	})
	seenAt := time.Now()
	if out := strings.TrimSpace(e.docker(t, "inspect", "-f", "{{.State.Running}}", master)); out != "false" {
		t.Errorf("the killed master is running again (%s): its restart policy undid the kill", out)
	}
	t.Logf("sentinel failover: kill → +sdown %s, +odown %s, +switch-master %s; kill → held job answered %s; "+
		"kill → first model call of the job enqueued after the kill %s, its answer %s; every worker on the new master %s",
		ms(sdown.at.Sub(killed)), ms(odown.at.Sub(killed)), ms(sw.at.Sub(killed)), ms(heldAt.Sub(killed)),
		ms(claim.Sub(killed)), ms(afterAt.Sub(killed)), ms(seenAt.Sub(killed)))

	// ---- the old master comes back as a replica ----
	back := time.Now()
	e.compose("start", "redis")
	// The sentinels see it claim the master role, then reconfigure it:
	// "+role-change slave <addr> … new reported role is slave".
	conv := ev.wait(t, "+role-change", "slave "+masterIP+":6379 ", back, "new reported role is slave")
	e.waitHealthy(3)
	if out := e.docker(t, "exec", master, "redis-cli", "info", "replication"); !strings.Contains(out, "role:slave") ||
		!strings.Contains(out, "master_host:"+replicaIP) {
		t.Errorf("the old master after its return:\n%s", out)
	}
	e.waitWorkersSee(t, "master "+replicaIP+" with the old master as its replica", func(h redisHealth) bool {
		return h.Master == replicaIP+":6379" && len(h.Replicas) == 1
	})
	e.tg.UserMessage(user, user, "old master is back")
	e.waitReply(t, "answered with the old master back")
	e.barrier(t)
	if n := e.count("answered with the old master back"); n != 1 {
		t.Errorf("answers = %d, want exactly 1", n)
	}
	t.Logf("sentinel failover: old master started → a replica again %s; the Sentinel stage took %s",
		ms(conv.at.Sub(back)), time.Since(began).Round(time.Second))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// redisHealth is the "redis" object of a worker's /healthz.
type redisHealth struct {
	Mode          string   `json:"mode"`
	Master        string   `json:"master"`
	Replicas      []string `json:"replicas"`
	FailoversSeen int      `json:"failovers_seen"`
	Error         string   `json:"error"`
}

// waitWorkersSee waits until every running worker's /healthz (port 9464,
// reached from the host at the container's address) reports a Redis
// deployment for which ok holds.
func (e *env) waitWorkersSee(t *testing.T, what string, ok func(redisHealth) bool) {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(step)
	var last []string
	for time.Now().Before(deadline) {
		last = last[:0]
		all := true
		for _, id := range e.ids("worker") {
			var body struct {
				Redis redisHealth `json:"redis"`
			}
			resp, err := hc.Get("http://" + e.containerIP(t, id) + ":9464/healthz")
			if err == nil {
				err = json.NewDecoder(resp.Body).Decode(&body)
				resp.Body.Close()
			}
			last = append(last, fmt.Sprintf("%s: %+v %v", id[:12], body.Redis, err))
			if err != nil || !ok(body.Redis) {
				all = false
			}
		}
		if all {
			return
		}
		time.Sleep(500 * time.Millisecond) // the workers' topology watchers poll every 2 s
	}
	t.Fatalf("workers do not report %s within %v:\n%s", what, step, strings.Join(last, "\n"))
}

func (e *env) containerIP(t *testing.T, id string) string {
	t.Helper()
	f := strings.Fields(e.docker(t, "inspect", "-f", `{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}`, id))
	if len(f) == 0 {
		t.Fatalf("container %s has no address", id)
	}
	return f[0]
}

// sentinelEvents records the event streams of the sentinels (PSUBSCRIBE *
// on each), read from the host at the containers' addresses, with arrival
// times and the service each came from. All of them, not one: only a
// sentinel that reaches the objective-down judgement itself publishes
// +odown, and one that is asked for its vote by a quicker peer, then
// handed the new configuration, may never do so.
type sentinelEvents struct {
	mu     sync.Mutex
	events []sentinelEvent
	more   chan struct{} // closed and replaced on each event
}

type sentinelEvent struct {
	at      time.Time
	from    string // the sentinel's service
	channel string
	payload string
}

func (e *env) watchSentinels(t *testing.T, services ...string) *sentinelEvents {
	t.Helper()
	s := &sentinelEvents{more: make(chan struct{})}
	for _, service := range services {
		addr := e.containerIP(t, e.ids(service)[0]) + ":26379"
		c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
		ctx, cancel := context.WithCancel(context.Background())
		ps := c.PSubscribe(ctx, "*")
		if _, err := ps.Receive(ctx); err != nil {
			cancel()
			t.Fatalf("PSUBSCRIBE on %s (%s): %v", service, addr, err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for m := range ps.Channel() {
				s.mu.Lock()
				s.events = append(s.events, sentinelEvent{at: time.Now(), from: service, channel: m.Channel, payload: m.Payload})
				close(s.more)
				s.more = make(chan struct{})
				s.mu.Unlock()
			}
		}()
		t.Cleanup(func() {
			cancel()
			_ = ps.Close()
			_ = c.Close()
			<-done
		})
	}
	// Registered last, so it runs first: the streams are still open,
	// which is harmless, and the log shows every sentinel's events.
	t.Cleanup(func() {
		if t.Failed() {
			s.mu.Lock()
			for _, ev := range s.events {
				t.Logf("%s %s %s %s", ev.at.Format("15:04:05.000"), ev.from, ev.channel, ev.payload)
			}
			s.mu.Unlock()
		}
	})
	return s
}

// wait returns the first event on channel after since whose payload
// starts with prefix (and ends with suffix, when given).
func (s *sentinelEvents) wait(t *testing.T, channel, prefix string, since time.Time, suffix ...string) sentinelEvent {
	t.Helper()
	timeout := time.After(step)
	for {
		s.mu.Lock()
		for _, ev := range s.events {
			if ev.channel == channel && strings.HasPrefix(ev.payload, prefix) && !ev.at.Before(since) &&
				(len(suffix) == 0 || strings.HasSuffix(ev.payload, suffix[0])) {
				s.mu.Unlock()
				return ev
			}
		}
		more := s.more
		s.mu.Unlock()
		select {
		case <-more:
		case <-timeout:
			t.Fatalf("no sentinel event %s %q… within %v", channel, prefix, step)
			return sentinelEvent{}
		}
	}
}
