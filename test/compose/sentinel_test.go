package compose

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/odekrun/odek/queue"
	"gopkg.in/yaml.v3"
)

// sentinelFile is the opt-in HA overlay of docker-compose.yml. The
// compose test brings it up for real and fails its master over
// (checkSentinel, in TestCompose; run.sh only); TestSentinelComposeWiring
// checks in plain `go test`, without Docker, what only the file can get
// wrong (names, ports, the password, who points where), and .ci/run has
// Compose itself validate the merged files (`docker-compose -f
// docker-compose.yml -f docker-compose.sentinel.yml config -q`).
const sentinelFile = "../../docker-compose.sentinel.yml"

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	Volumes []string `yaml:"volumes"`
	Restart string   `yaml:"restart"`
}

// passwordRef is how every service must take the Redis password: from
// .env, refusing to start without it.
var passwordRef = regexp.MustCompile(`^\$\{REDIS_PASSWORD:\?[^}]+\}$`)

// TestSentinelComposeWiring parses docker-compose.sentinel.yml and checks
// that it makes the topology docs/DEPLOY.md describes: a master and a
// replica that both require the password and replicate with it, three
// sentinels that watch the master under the name the clients ask for,
// with a quorum they can reach and the password to watch it, health
// checks the clients wait on, and bot and worker pointed at all three
// sentinels through a REDIS_URL that queue.ParseRedisURL accepts as
// Sentinel mode with that master name.
func TestSentinelComposeWiring(t *testing.T) {
	src, err := os.ReadFile(sentinelFile)
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(src, &f); err != nil {
		t.Fatalf("%s: %v", sentinelFile, err)
	}
	arg := func(cmd []string, flag string) (string, bool) {
		i := slices.Index(cmd, flag)
		if i < 0 || i+1 >= len(cmd) {
			return "", false
		}
		return cmd[i+1], true
	}

	// The data nodes.
	for _, name := range []string{"redis", "redis-replica"} {
		s, ok := f.Services[name]
		if !ok {
			t.Fatalf("no service %q", name)
		}
		if len(s.Command) == 0 || s.Command[0] != "redis-server" {
			t.Errorf("%s: command %v does not start redis-server", name, s.Command)
			continue
		}
		for _, flag := range []string{"--requirepass", "--masterauth"} {
			if v, ok := arg(s.Command, flag); !ok || !passwordRef.MatchString(v) {
				t.Errorf("%s: %s is %q, want ${REDIS_PASSWORD:?...}: after a failover either node is the master", name, flag, v)
			}
		}
		if v, _ := arg(s.Command, "--replica-announce-ip"); v != name {
			t.Errorf("%s: --replica-announce-ip %q, want its service name (what the sentinels resolve)", name, v)
		}
		if v, _ := arg(s.Command, "--appendonly"); v != "yes" {
			t.Errorf("%s: --appendonly %q, want yes", name, v)
		}
	}
	rep := f.Services["redis-replica"]
	if i := slices.Index(rep.Command, "--replicaof"); i < 0 || i+2 >= len(rep.Command) || rep.Command[i+1] != "redis" || rep.Command[i+2] != "6379" {
		t.Errorf("redis-replica: command %v does not replicate redis 6379", rep.Command)
	}
	if !passwordRef.MatchString(rep.Environment["REDISCLI_AUTH"]) || rep.Healthcheck == nil {
		t.Errorf("redis-replica: its health check needs REDISCLI_AUTH from REDIS_PASSWORD and a healthcheck: %+v", rep)
	}
	if rep.DependsOn["redis"].Condition != "service_healthy" || !slices.Contains(rep.Volumes, "redis-replica-data:/data") {
		t.Errorf("redis-replica: depends_on %+v, volumes %v", rep.DependsOn, rep.Volumes)
	}
	if _, ok := f.Volumes["redis-replica-data"]; !ok {
		t.Error("volume redis-replica-data is not declared")
	}

	// The sentinels.
	var sentinels []string
	var master string
	for name, s := range f.Services {
		if !strings.HasPrefix(name, "sentinel-") {
			continue
		}
		sentinels = append(sentinels, name+":26379")
		script := strings.Join(s.Command, "\n")
		m := regexp.MustCompile(`'sentinel monitor (\S+) redis 6379 (\d+)'`).FindStringSubmatch(script)
		if m == nil {
			t.Errorf("%s: no 'sentinel monitor <name> redis 6379 <quorum>' in %q", name, script)
			continue
		}
		if master != "" && m[1] != master {
			t.Errorf("%s monitors %q, another sentinel %q", name, m[1], master)
		}
		master = m[1]
		if m[2] != "2" {
			t.Errorf("%s: quorum %s, want 2 of 3", name, m[2])
		}
		for _, want := range []string{
			"'port 26379'",
			"'sentinel resolve-hostnames yes'",
			`"sentinel auth-pass ` + master + ` $$REDIS_PASSWORD"`,
			"'sentinel down-after-milliseconds " + master + " 1000'",
			"exec redis-server /tmp/sentinel.conf --sentinel",
		} {
			if !strings.Contains(script, want) {
				t.Errorf("%s: command lacks %s", name, want)
			}
		}
		if !passwordRef.MatchString(s.Environment["REDIS_PASSWORD"]) {
			t.Errorf("%s: REDIS_PASSWORD %q, want ${REDIS_PASSWORD:?...}", name, s.Environment["REDIS_PASSWORD"])
		}
		if s.DependsOn["redis"].Condition != "service_healthy" || s.Healthcheck == nil ||
			!slices.Contains(s.Healthcheck.Test, "get-master-addr-by-name") || !slices.Contains(s.Healthcheck.Test, master) {
			t.Errorf("%s: depends_on %+v, healthcheck %+v", name, s.DependsOn, s.Healthcheck)
		}
	}
	slices.Sort(sentinels)
	if len(sentinels) != 3 {
		t.Fatalf("sentinels %v, want 3", sentinels)
	}

	// The clients.
	for _, name := range []string{"bot", "worker"} {
		s := f.Services[name]
		raw := s.Environment["REDIS_URL"]
		ref := regexp.MustCompile(`\$\{REDIS_PASSWORD:\?[^}]+\}`)
		if !ref.MatchString(raw) {
			t.Errorf("%s: REDIS_URL %q does not carry ${REDIS_PASSWORD:?...}", name, raw)
			continue
		}
		u, err := queue.ParseRedisURL(ref.ReplaceAllString(raw, "pw"))
		if err != nil {
			t.Errorf("%s: REDIS_URL: %v", name, err)
			continue
		}
		got := slices.Clone(u.Addrs)
		slices.Sort(got)
		if u.Mode != queue.ModeSentinel || u.Master != master || !slices.Equal(got, sentinels) {
			t.Errorf("%s: REDIS_URL is %s, want sentinel mode, master %q, sentinels %v", name, u, master, sentinels)
		}
		if !strings.Contains(raw, "?password=${REDIS_PASSWORD") {
			t.Errorf("%s: REDIS_URL gives the master's password other than as ?password= (go-redis' rule: user info goes to the sentinels)", name)
		}
		if name == "bot" {
			for _, sn := range sentinels {
				if s.DependsOn[strings.TrimSuffix(sn, ":26379")].Condition != "service_healthy" {
					t.Errorf("bot does not wait for %s to be healthy", sn)
				}
			}
		}
	}
}
