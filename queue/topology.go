package queue

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// TopologyInfo is what a client sees of its Redis deployment, for health
// endpoints, metrics and `odek doctor --redis`.
type TopologyInfo struct {
	// Mode is ModeSingle, ModeSentinel or ModeCluster.
	Mode string `json:"mode"`
	// Master is the address of the node that is master for the queue's
	// hash slot (single and Sentinel: the one master), as dialled.
	Master string `json:"master"`
	// MasterID identifies the master process (its run_id, or its cluster
	// node id); it changes on a failover and on a restart.
	MasterID string `json:"master_id,omitempty"`
	// Replicas are the master's replicas the master reports (host:port).
	Replicas []string `json:"replicas"`
	// Masters counts the cluster's masters (1 otherwise).
	Masters int `json:"masters"`
}

// DescribeRedis asks Redis, through c, which node is master for key (the
// queue's: KeyPrefix(prefix)+"jobs") and which replicas it has.
func DescribeRedis(ctx context.Context, c redis.UniversalClient, key string) (TopologyInfo, error) {
	switch c := c.(type) {
	case *redis.ClusterClient:
		return describeCluster(ctx, c, key)
	case *redis.Client:
		return describeNode(ctx, c)
	}
	return TopologyInfo{}, fmt.Errorf("queue: describe Redis: unknown client type %T", c)
}

func describeNode(ctx context.Context, c *redis.Client) (TopologyInfo, error) {
	ti := TopologyInfo{Mode: ModeSingle, Masters: 1}
	if c.Options().Addr == "FailoverClient" { // go-redis' name for a Sentinel-backed client
		ti.Mode = ModeSentinel
	}
	// One connection for the three, so they describe the same node.
	var info, rep *redis.StringCmd
	var cinfo *redis.Cmd
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		cinfo = p.Do(ctx, "CLIENT", "INFO")
		info = p.Info(ctx, "server")
		rep = p.Info(ctx, "replication")
		return nil
	})
	if err != nil {
		return ti, fmt.Errorf("queue: describe Redis: %w", err)
	}
	ci, _ := cinfo.Text()
	ti.Master = infoField(strings.ReplaceAll(ci, " ", "\n"), "laddr=")
	ti.MasterID = infoField(info.Val(), "run_id:")
	r := rep.Val()
	if role := infoField(r, "role:"); role != "master" {
		return ti, fmt.Errorf("queue: describe Redis: the node at %s is a %s, not a master", ti.Master, role)
	}
	ti.Replicas = replicasOf(r)
	return ti, nil
}

// replicasOf reads "slaveN:ip=...,port=...,state=online" lines.
func replicasOf(info string) []string {
	out := []string{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "slave") || !strings.Contains(line, ":ip=") {
			continue
		}
		_, kv, _ := strings.Cut(line, ":")
		var ip, port string
		for _, f := range strings.Split(kv, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "ip":
				ip = v
			case "port":
				port = v
			}
		}
		out = append(out, ip+":"+port)
	}
	return out
}

// infoField returns the value after name on its line of an INFO reply.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name); ok {
			return v
		}
	}
	return ""
}

func describeCluster(ctx context.Context, c *redis.ClusterClient, key string) (TopologyInfo, error) {
	ti := TopologyInfo{Mode: ModeCluster, Replicas: []string{}}
	slot, err := c.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return ti, fmt.Errorf("queue: describe Redis cluster: %w", err)
	}
	shards, err := c.ClusterShards(ctx).Result()
	if err != nil {
		return ti, fmt.Errorf("queue: describe Redis cluster: %w", err)
	}
	masters := 0
	for _, s := range shards {
		m, replicas, ok := shardMaster(s)
		if !ok {
			continue
		}
		masters++
		for _, r := range s.Slots {
			if r.Start <= slot && slot <= r.End {
				ti.Master, ti.MasterID = m, s.Nodes[0].ID
				for _, n := range s.Nodes {
					if n.Role == "master" {
						ti.MasterID = n.ID
					}
				}
				ti.Replicas = replicas
			}
		}
	}
	ti.Masters = masters
	if ti.Master == "" {
		return ti, fmt.Errorf("queue: describe Redis cluster: no master serves slot %d (%s)", slot, key)
	}
	return ti, nil
}

// ShardMaster returns the address of a CLUSTER SHARDS shard's master and
// of its online replicas; ok is false for a shard without a live master
// (no slots, or a master marked failed).
func shardMaster(s redis.ClusterShard) (master string, replicas []string, ok bool) {
	replicas = []string{}
	for _, n := range s.Nodes {
		addr := net.JoinHostPort(nodeHost(n), strconv.FormatInt(n.Port, 10))
		switch {
		case n.Role == "master" && n.Health != "failed":
			master, ok = addr, len(s.Slots) > 0
		case n.Role == "replica" && n.Health == "online":
			replicas = append(replicas, addr)
		}
	}
	return master, replicas, ok
}

// nodeHost is the name a node announces, else its IP.
func nodeHost(n redis.Node) string {
	if n.Endpoint != "" && n.Endpoint != "?" {
		return n.Endpoint
	}
	return n.IP
}

// TopologyWatcher polls DescribeRedis and counts the master changes it
// sees (failovers, and restarts of the master). Safe for concurrent use.
type TopologyWatcher struct {
	c   redis.UniversalClient
	key string

	mu      sync.Mutex
	last    TopologyInfo
	err     error
	changes uint64
	checked time.Time
}

// NewTopologyWatcher watches the master of key (a queue's:
// KeyPrefix(prefix)+"jobs") through c.
func NewTopologyWatcher(c redis.UniversalClient, key string) *TopologyWatcher {
	return &TopologyWatcher{c: c, key: key}
}

// Check describes the deployment once and counts a master change.
func (w *TopologyWatcher) Check(ctx context.Context) {
	ti, err := DescribeRedis(ctx, w.c, w.key)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err, w.checked = err, time.Now()
	if err != nil {
		return
	}
	if w.last.MasterID != "" && (ti.MasterID != w.last.MasterID || ti.Master != w.last.Master) {
		w.changes++
	}
	w.last = ti
}

// Run checks every interval until ctx ends.
func (w *TopologyWatcher) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, interval)
		w.Check(cctx)
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Snapshot returns the last description, the master changes seen since
// the watcher started, and the last check's error.
func (w *TopologyWatcher) Snapshot() (TopologyInfo, uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ti := w.last
	ti.Replicas = append([]string(nil), ti.Replicas...)
	return ti, w.changes, w.err
}

// Health is the snapshot as JSON fields for a /healthz answer, with the
// replica waits of the queues on the watched client (Replication).
func (w *TopologyWatcher) Health() map[string]any {
	ti, n, err := w.Snapshot()
	m := map[string]any{"mode": ti.Mode, "master": ti.Master, "replicas": ti.Replicas, "failovers_seen": n,
		"replica_waits": Replication(w.c)}
	if err != nil {
		m["error"] = err.Error()
	}
	return m
}
