package queuetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/odekrun/odek/queue"
	"github.com/redis/go-redis/v9"
)

// Topology is a real Redis deployment started for one test: a single
// node, a Sentinel group (1 master, 1 replica, 3 sentinels) or a cluster
// (3 masters, 3 replicas). Every process is a child of the test, on free
// loopback ports, with its data in t.TempDir; all are killed when the test
// ends, and only they are.
type Topology struct {
	// Mode is queue.ModeSingle, queue.ModeSentinel or queue.ModeCluster.
	Mode string
	// URL is the REDIS_URL that reaches it (parsed by queue.ParseRedisURL).
	URL string
	// Nodes are the data nodes: for Sentinel the first master and its
	// replica; for a cluster the three first masters, then their replicas.
	Nodes []*Server
	// Sentinels are the sentinels (ModeSentinel only).
	Sentinels []*Server
	// MasterName is the Sentinel master name.
	MasterName string

	t testing.TB
}

// Topologies are the three modes, in the order the suites run them.
var Topologies = []string{queue.ModeSingle, queue.ModeSentinel, queue.ModeCluster}

// StartTopology starts the deployment of mode (see Topology). It skips
// like StartServer when redis-server is missing.
func StartTopology(t testing.TB, mode string) *Topology {
	t.Helper()
	switch mode {
	case queue.ModeSingle:
		s := StartServer(t, ServerOptions{})
		return &Topology{Mode: mode, t: t, Nodes: []*Server{s}, URL: "redis://" + s.Addr + "/0"}
	case queue.ModeSentinel:
		return startSentinel(t)
	case queue.ModeCluster:
		return startCluster(t)
	}
	t.Fatalf("queuetest: unknown topology %q", mode)
	return nil
}

// Client returns a client built from URL the way odek's commands build
// one, closed when the test ends.
func (tp *Topology) Client() redis.UniversalClient {
	tp.t.Helper()
	c, _, err := queue.NewRedisClient(tp.URL)
	if err != nil {
		tp.t.Fatalf("queuetest: %v", err)
	}
	tp.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Master returns the node that is master now for the queue's slot (the
// slot of key; any key for a single node or Sentinel).
func (tp *Topology) Master(ctx context.Context, key string) (*Server, error) {
	switch tp.Mode {
	case queue.ModeSingle:
		return tp.Nodes[0], nil
	case queue.ModeSentinel:
		for _, s := range tp.Sentinels {
			if !s.Alive() {
				continue
			}
			c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
			addr, err := c.GetMasterAddrByName(ctx, tp.MasterName).Result()
			c.Close()
			if err == nil {
				return tp.node(addr[0] + ":" + addr[1])
			}
		}
		return nil, fmt.Errorf("queuetest: no sentinel answers")
	}
	for _, n := range tp.Nodes {
		if !n.Alive() {
			continue
		}
		c := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		slot, err1 := c.ClusterKeySlot(ctx, key).Result()
		shards, err2 := c.ClusterShards(ctx).Result()
		c.Close()
		if err1 != nil || err2 != nil {
			continue
		}
		for _, sh := range shards {
			for _, r := range sh.Slots {
				if r.Start > slot || slot > r.End {
					continue
				}
				for _, nd := range sh.Nodes {
					if nd.Role == "master" && nd.Health != "failed" {
						return tp.node(net.JoinHostPort(nd.IP, strconv.FormatInt(nd.Port, 10)))
					}
				}
			}
		}
	}
	return nil, fmt.Errorf("queuetest: no cluster node knows the master of %q", key)
}

// ReplicaOf returns a live data node that replicates master now.
func (tp *Topology) ReplicaOf(ctx context.Context, master *Server) (*Server, error) {
	for _, n := range tp.Nodes {
		if n == master || !n.Alive() {
			continue
		}
		c := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		info, err := c.Info(ctx, "replication").Result()
		c.Close()
		if err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_port:"+port(master.Addr)+"\r\n") {
			return n, nil
		}
	}
	return nil, fmt.Errorf("queuetest: no replica of %s", master.Addr)
}

func (tp *Topology) node(addr string) (*Server, error) {
	for _, n := range tp.Nodes {
		if n.Addr == addr {
			return n, nil
		}
	}
	return nil, fmt.Errorf("queuetest: %s is not a node of this topology", addr)
}

// Alive reports whether the server process still runs.
func (s *Server) Alive() bool { return s.cmd != nil }

// WaitFailover polls until a node other than old is the master of key's
// slot and accepts writes, or the deadline passes. It returns the new
// master.
func (tp *Topology) WaitFailover(ctx context.Context, old *Server, key string, within time.Duration) (*Server, error) {
	deadline := time.Now().Add(within)
	for {
		m, err := tp.Master(ctx, key)
		if err == nil && m != old {
			c := redis.NewClient(&redis.Options{Addr: m.Addr, MaxRetries: -1})
			role, err := c.Do(ctx, "ROLE").Slice()
			c.Close()
			if err == nil && len(role) > 0 && role[0] == "master" {
				return m, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("queuetest: no failover away from %s within %v", old.Addr, within)
		}
		time.Sleep(50 * time.Millisecond) // polling a real server's state
	}
}

// waitFor polls cond every 20 ms until it holds or within passes.
func waitFor(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("queuetest: %s: not within %v", what, within)
		}
		time.Sleep(20 * time.Millisecond) // polling a real server's state
	}
}

func startSentinel(t testing.TB) *Topology {
	t.Helper()
	const name = "odek"
	m := StartServer(t, ServerOptions{Args: fastReplication})
	r := StartServer(t, ServerOptions{Args: append([]string{"--replicaof", "127.0.0.1", port(m.Addr)}, fastReplication...)})
	tp := &Topology{Mode: queue.ModeSentinel, t: t, Nodes: []*Server{m, r}, MasterName: name}
	ctx := context.Background()
	waitFor(t, "replica in sync", 10*time.Second, func() bool {
		c := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1})
		defer c.Close()
		info, _ := c.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	})
	conf := "sentinel monitor " + name + " 127.0.0.1 " + port(m.Addr) + " 2\n" +
		"sentinel down-after-milliseconds " + name + " 1000\n" +
		"sentinel failover-timeout " + name + " 10000\n" +
		"sentinel parallel-syncs " + name + " 1\n"
	var addrs []string
	for range 3 {
		s := StartServer(t, ServerOptions{Sentinel: true, Config: conf})
		tp.Sentinels = append(tp.Sentinels, s)
		addrs = append(addrs, s.Addr)
	}
	// Failover needs the sentinels to know each other and the replica.
	for _, s := range tp.Sentinels {
		waitFor(t, "sentinel "+s.Addr+" sees the group", 15*time.Second, func() bool {
			c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
			defer c.Close()
			ss, err1 := c.Sentinels(ctx, name).Result()
			rs, err2 := c.Replicas(ctx, name).Result()
			return err1 == nil && err2 == nil && len(ss) == 2 && len(rs) == 1
		})
	}
	tp.URL = "redis+sentinel://" + strings.Join(addrs, ",") + "/" + name
	return tp
}

func startCluster(t testing.TB) *Topology {
	t.Helper()
	tp := &Topology{Mode: queue.ModeCluster, t: t}
	args := []string{"--cluster-enabled", "yes", "--cluster-config-file", "{dir}/nodes.conf", "--cluster-port", "{port2}",
		"--cluster-node-timeout", "1000", "--cluster-require-full-coverage", "no", "--cluster-replica-validity-factor", "0"}
	args = append(args, fastReplication...)
	for range 6 {
		tp.Nodes = append(tp.Nodes, StartServer(t, ServerOptions{Args: args}))
	}
	ctx := context.Background()
	cs := make([]*redis.Client, 6)
	ids := make([]string, 6)
	for i, n := range tp.Nodes {
		cs[i] = redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		defer cs[i].Close()
		id, err := cs[i].Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			t.Fatalf("queuetest: cluster myid: %v", err)
		}
		ids[i] = id
	}
	for i := 1; i < 6; i++ {
		if err := cs[i].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", port(tp.Nodes[0].Addr), tp.Nodes[0].port2).Err(); err != nil {
			t.Fatalf("queuetest: cluster meet: %v", err)
		}
	}
	ranges := [3][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}
	for i, r := range ranges {
		if err := cs[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", r[0], r[1]).Err(); err != nil {
			t.Fatalf("queuetest: cluster addslotsrange: %v", err)
		}
	}
	waitFor(t, "cluster nodes meet", 15*time.Second, func() bool {
		for _, c := range cs {
			nodes, err := c.ClusterNodes(ctx).Result()
			if err != nil || strings.Count(nodes, "\n") < 6 {
				return false
			}
		}
		return true
	})
	for i := 3; i < 6; i++ {
		if err := cs[i].Do(ctx, "CLUSTER", "REPLICATE", ids[i-3]).Err(); err != nil {
			t.Fatalf("queuetest: cluster replicate: %v", err)
		}
	}
	waitFor(t, "cluster state ok with replicas in sync", 20*time.Second, func() bool {
		for i, c := range cs {
			info, err := c.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
			// Every node knows every master's replica (gossip).
			shards, err := c.ClusterShards(ctx).Result()
			if err != nil || len(shards) != 3 {
				return false
			}
			for _, s := range shards {
				if len(s.Nodes) != 2 || s.Nodes[0].Health != "online" || s.Nodes[1].Health != "online" {
					return false
				}
			}
			if i >= 3 {
				rep, _ := c.Info(ctx, "replication").Result()
				if !strings.Contains(rep, "master_link_status:up") {
					return false
				}
			}
		}
		return true
	})
	var addrs []string
	for _, n := range tp.Nodes[:3] {
		addrs = append(addrs, n.Addr)
	}
	tp.URL = "redis+cluster://" + strings.Join(addrs, ",")
	return tp
}

func port(addr string) string {
	i := strings.LastIndexByte(addr, ':')
	return addr[i+1:]
}

// EachTopology runs f as a subtest on each of the three topologies (each
// started for that subtest). ODEK_REDIS_TOPOLOGIES (a comma list of
// single, sentinel, cluster) narrows the set. The subtests run in parallel
// (t.Parallel), each on its own processes and ports, so f must not share
// mutable state across calls.
func EachTopology(t *testing.T, f func(t *testing.T, tp *Topology)) {
	modes := Topologies
	if v := os.Getenv("ODEK_REDIS_TOPOLOGIES"); v != "" {
		modes = strings.Split(v, ",")
	}
	for _, m := range modes {
		t.Run(m, func(t *testing.T) {
			t.Parallel()
			f(t, StartTopology(t, m))
		})
	}
}

// fastReplication are the replication settings of every data node of a
// Sentinel group or cluster (any of them may become a master after a
// failover). A master starts a replica's full sync at once instead of
// after redis-server's default 5 s (repl-diskless-sync-delay, a wait for
// more replicas to share one transfer: these topologies have one replica
// per master), and pings its replicas every second instead of every 10 s
// (repl-ping-replica-period): until the first ping an idle master's
// replication offset stays 0, and a cluster reports a replica at offset 0
// as "loading", not "online", which startCluster waits out. Together they
// took a Sentinel group's start from about 7 s to 2.5 s and a cluster's
// from 10.5 s to 2.6 s on an idle machine.
var fastReplication = []string{"--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1"}
