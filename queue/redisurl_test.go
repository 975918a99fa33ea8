package queue

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestParseRedisURLForms(t *testing.T) {
	for _, tc := range []struct {
		in     string
		mode   string
		addrs  string
		master string
		tls    bool
	}{
		{"redis://localhost:6379/0", ModeSingle, "localhost:6379", "", false},
		{"redis://:pw@10.0.0.1", ModeSingle, "10.0.0.1:6379", "", false},
		{"rediss://u:p@cache.example:6380/2?dial_timeout=3s", ModeSingle, "cache.example:6380", "", true},
		{"redis://[::1]:7000", ModeSingle, "[::1]:7000", "", false},
		{"redis+sentinel://s1:26379,s2:26379,s3:26379/mymaster?password=pw", ModeSentinel, "s1:26379,s2:26379,s3:26379", "mymaster", false},
		{"redis-sentinel://s1:26379/mymaster/3", ModeSentinel, "s1:26379", "mymaster", false},
		{"rediss+sentinel://su:sp@s1:26379?master_name=m", ModeSentinel, "s1:26379", "m", true},
		{"redis+cluster://n1:7000,n2:7001,n3:7002", ModeCluster, "n1:7000,n2:7001,n3:7002", "", false},
		{"rediss-cluster://:pw@n1:7000?max_redirects=4", ModeCluster, "n1:7000", "", true},
	} {
		u, err := ParseRedisURL(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if u.Mode != tc.mode || strings.Join(u.Addrs, ",") != tc.addrs || u.Master != tc.master || u.TLS != tc.tls {
			t.Errorf("%s: got %+v", tc.in, u)
		}
		if strings.Contains(u.String(), "pw") || strings.Contains(u.String(), "sp") {
			t.Errorf("%s: String() shows a password: %s", tc.in, u)
		}
		c := u.NewClient()
		c.Close()
	}
}

// TestParseRedisURLOptionsReachTheClient checks the options of each mode
// land in the client: credentials where go-redis' rules put them, odek's
// retry and reload defaults, TLS in every mode.
func TestParseRedisURLOptionsReachTheClient(t *testing.T) {
	u, err := ParseRedisURL("rediss+sentinel://su:sp@s1:26379,s2:26380/mymaster/2?password=mp&username=mu")
	if err != nil {
		t.Fatal(err)
	}
	f := u.failover
	if f.SentinelUsername != "su" || f.SentinelPassword != "sp" || f.Username != "mu" || f.Password != "mp" || f.DB != 2 ||
		strings.Join(f.SentinelAddrs, ",") != "s1:26379,s2:26380" || f.TLSConfig == nil || f.TLSConfig.ServerName != "" {
		t.Errorf("failover options: %+v", f)
	}
	u, err = ParseRedisURL("rediss+cluster://:cp@n1:7000,n2:7001?tls_server_name=redis.internal")
	if err != nil {
		t.Fatal(err)
	}
	c := u.NewClient().(*redis.ClusterClient)
	defer c.Close()
	o := c.Options()
	if o.Password != "cp" || o.ClusterStateReloadInterval != ClusterStateReload || o.MaxRetries != -1 ||
		o.MaxRedirects != clusterAttempts || o.DialerRetries != 1 || o.DialTimeout != clusterDialTimeout || o.NewClient == nil ||
		o.TLSConfig == nil || o.TLSConfig.ServerName != "redis.internal" || len(o.Addrs) != 2 {
		t.Errorf("cluster options: %+v", o)
	}
	u, err = ParseRedisURL("rediss://h.example:6380")
	if err != nil {
		t.Fatal(err)
	}
	if u.single.TLSConfig.ServerName != "h.example" || u.single.TLSConfig.MinVersion != 0x0303 {
		t.Errorf("single TLS: %+v", u.single.TLSConfig)
	}
}

func TestParseRedisURLErrorsNameThePart(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, part string }{
		{"", ""},
		{"localhost:6379", "scheme"},
		{"http://h:1", "scheme"},
		{"redis+tls://h:1", "scheme"},
		{"redis://:secretpw@h:99999", "port"},
		{"redis://:secretpw@h:abc", "port"},
		{"redis://a:1,b:2", "host"},
		{"redis+cluster://a:1,,b:2", "host"},
		{"redis://h:1/x", "path"},
		{"redis://h:1/1/2", "path"},
		{"redis+sentinel://s:26379", "path"},
		{"redis+sentinel://s:26379/m/x", "path"},
		{"redis+sentinel://s:26379/m?master_name=n", "path"},
		{"redis+cluster://n:7000/1", "path"},
		{"redis://h:1?tls_ca=/x", "option tls_ca"},
		{"rediss://h:1?tls_ca=" + notPEM, "option tls_ca"},
		{"rediss://h:1?tls_ca=" + filepath.Join(dir, "missing"), "option tls_ca"},
		{"redis://h:1?no_such_option=1", "option"},
		{"redis://h:1?dial_timeout=soon", "option"},
		{"redis://h:1#frag", "fragment"},
		{"redis://" + strings.Repeat("a", MaxRedisURLBytes), ""},
	} {
		_, err := ParseRedisURL(tc.in)
		var ue *RedisURLError
		if !errors.As(err, &ue) {
			t.Errorf("%q: want a *RedisURLError, got %v", tc.in, err)
			continue
		}
		if ue.Part != tc.part {
			t.Errorf("%q: part %q, want %q (%v)", tc.in, ue.Part, tc.part, err)
		}
		if strings.Contains(err.Error(), "secretpw") {
			t.Errorf("%q: error shows the password: %v", tc.in, err)
		}
	}
}

// FuzzParseRedisURL: any input is either rejected with a *RedisURLError
// that does not repeat a password, or yields a client of the named mode
// with at least one address.
func FuzzParseRedisURL(f *testing.F) {
	for _, s := range []string{
		"redis://h:1", "rediss://u:p@h:2/3?dial_timeout=1s", "redis+sentinel://a:1,b:2/m?password=x",
		"redis-cluster://a:1,b:2,c:3", "redis://[::1]:1", "redis://:%zz@h", "redis+cluster://@/", "rediss://h?tls_server_name=",
		"redis://h:1?addr=x:2", "redis+sentinel://a:1/m?addr=%", "redis://h:1/0?db=3",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseRedisURL(s)
		if err != nil {
			var ue *RedisURLError
			if !errors.As(err, &ue) {
				t.Fatalf("%q: error of type %T: %v", s, err, err)
			}
			return
		}
		if len(u.Addrs) == 0 || (u.Mode != ModeSingle && u.Mode != ModeSentinel && u.Mode != ModeCluster) {
			t.Fatalf("%q: parsed to %+v", s, u)
		}
		if u.Mode == ModeSentinel && u.Master == "" {
			t.Fatalf("%q: sentinel without master", s)
		}
		if u.TLS {
			var tc any
			switch {
			case u.single != nil:
				tc = u.single.TLSConfig
			case u.failover != nil:
				tc = u.failover.TLSConfig
			default:
				tc = u.cluster.TLSConfig
			}
			if tc == nil {
				t.Fatalf("%q: TLS scheme without TLS config", s)
			}
		}
		c := u.NewClient()
		_ = c.Close()
	})
}

// The replies of a failover in progress are transient (retried, never a
// job's failure); answers Redis means are not.
func TestUnreachableFailoverReplies(t *testing.T) {
	for _, s := range []string{"READONLY You can't write against a read only replica.", "LOADING Redis is loading the dataset in memory",
		"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.", "CLUSTERDOWN The cluster is down",
		"TRYAGAIN Multiple keys request during rehashing of slot", "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)",
		"MOVED 3999 127.0.0.1:6381", "ASK 3999 127.0.0.1:6381", "NOREPLICAS Not enough good replicas to write."} {
		if !Unreachable(errors.New(s)) {
			t.Errorf("%q: not transient", s)
		}
	}
	for _, s := range []string{"WRONGPASS invalid username-password pair", "ERR Error running script", "NOSCRIPT No matching script", "ASKING is not"} {
		if Unreachable(errors.New(s)) {
			t.Errorf("%q: transient", s)
		}
	}
}

// TestParseRedisURLReplicaOptions: min_replicas and replica_timeout are
// odek's (go-redis never sees them), bounded, and reach the queue through
// the client NewClient builds.
func TestParseRedisURLReplicaOptions(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ReplicaOptions
	}{
		{"redis://h:1", ReplicaOptions{MinReplicas: -1}},
		{"redis://h:1?min_replicas=auto", ReplicaOptions{MinReplicas: -1}},
		{"redis://h:1?min_replicas=0", ReplicaOptions{MinReplicas: 0}},
		{"redis+sentinel://s:1/m?min_replicas=2&replica_timeout=250ms&password=x", ReplicaOptions{MinReplicas: 2, Timeout: 250 * time.Millisecond}},
		{"redis+cluster://a:1,b:2?replica_timeout=2s", ReplicaOptions{MinReplicas: -1, Timeout: 2 * time.Second}},
	} {
		u, err := ParseRedisURL(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if u.Replicas != tc.want {
			t.Errorf("%s: replicas %+v, want %+v", tc.in, u.Replicas, tc.want)
		}
		c := u.NewClient()
		if st := stateOf(c); st.fromURL != (tc.want != ReplicaOptions{MinReplicas: -1}) || (st.fromURL && st.opts != tc.want) {
			t.Errorf("%s: client state %+v (from URL %v)", tc.in, st.opts, st.fromURL)
		}
		c.Close()
	}
	for _, tc := range []struct{ in, part string }{
		{"redis://h:1?min_replicas=17", "option min_replicas"},
		{"redis://h:1?min_replicas=-1", "option min_replicas"},
		{"redis://h:1?min_replicas=one", "option min_replicas"},
		{"redis://h:1?min_replicas=1&min_replicas=2", "option min_replicas"},
		{"redis://h:1?replica_timeout=0s", "option replica_timeout"},
		{"redis://h:1?replica_timeout=11s", "option replica_timeout"},
		{"redis://h:1?replica_timeout=500", "option replica_timeout"},
	} {
		_, err := ParseRedisURL(tc.in)
		var ue *RedisURLError
		if !errors.As(err, &ue) || ue.Part != tc.part {
			t.Errorf("%s: %v, want a RedisURLError for %s", tc.in, err, tc.part)
		}
	}
}
