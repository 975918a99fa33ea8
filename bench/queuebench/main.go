// Command queuebench measures odek's Redis queue side by side with
// github.com/hibiken/asynq on one redis-server it starts itself: bare
// throughput (enqueue → claim → ack of no-op jobs, producers and consumers
// running at once) and the pickup latency of an idle consumer.
//
// It is its own module so asynq never enters odek's go.mod. Run:
//
//	cd bench/queuebench && go run . -n 20000 -producers 16 -concurrency 4
//
// With -cluster it instead compares throughput on a 3-master Redis Cluster
// (started here; odek reaches it through a redis+cluster:// URL as odek's
// commands do, asynq through its cluster client) with one node, for odek
// and asynq, alternating rounds in one run:
//
//	cd bench/queuebench && go run . -cluster -n 20000 -producers 16 -concurrency 4
//
// With -wait it measures what waiting for a replica costs: odek on a
// master with one replica, with and without WAIT 1 on its writes:
//
//	cd bench/queuebench && go run . -wait -n 20000 -producers 16 -concurrency 4
//
// Every figure comes from the same run on the same server, so the
// comparison holds even on a noisy machine; absolute numbers do not.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/odekrun/odek/queue"
	"github.com/redis/go-redis/v9"
)

func main() {
	n := flag.Int("n", 20000, "jobs per throughput run")
	producers := flag.Int("producers", 16, "goroutines enqueueing at once")
	conc := flag.Int("concurrency", 4, "consumers (odek) / server concurrency (asynq)")
	pickups := flag.Int("pickups", 200, "idle pickup samples for odek")
	asynqPickups := flag.Int("asynq-pickups", 20, "idle pickup samples for asynq (its idle poll is slow)")
	rounds := flag.Int("rounds", 3, "throughput runs of each, alternating; the best is reported")
	cluster := flag.Bool("cluster", false, "compare odek and asynq on a 3-master cluster with one node")
	wait := flag.Bool("wait", false, "compare odek on a master with a replica with and without waiting for it (WAIT 1)")
	flag.Parse()
	if *wait {
		if err := waitVsNoWait(*n, *producers, *conc, *rounds); err != nil {
			fmt.Fprintln(os.Stderr, "queuebench:", err)
			os.Exit(1)
		}
		return
	}
	if *cluster {
		if err := clusterVsSingle(*n, *producers, *conc, *rounds); err != nil {
			fmt.Fprintln(os.Stderr, "queuebench:", err)
			os.Exit(1)
		}
		return
	}

	addr, stop, err := startRedis()
	if err != nil {
		fmt.Fprintln(os.Stderr, "queuebench:", err)
		os.Exit(1)
	}
	defer stop()
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
	defer c.Close()
	ctx := context.Background()

	var best [2]float64
	for r := 0; r < *rounds; r++ {
		c.FlushAll(ctx)
		o := odekThroughput(c, *n, *producers, *conc)
		c.FlushAll(ctx)
		a := asynqThroughput(asynq.RedisClientOpt{Addr: addr, PoolSize: 64}, *n, *producers, *conc)
		fmt.Printf("round %d: odek %.0f jobs/s, asynq %.0f tasks/s\n", r+1, o, a)
		best[0], best[1] = max(best[0], o), max(best[1], a)
	}
	c.FlushAll(ctx)
	op50, op99 := odekPickup(c, *pickups)
	c.FlushAll(ctx)
	ap50, ap99 := asynqPickup(addr, *asynqPickups)

	fmt.Printf("\n| system | throughput (best of %d, %d jobs, %d producers, concurrency %d) | idle pickup p50 | idle pickup p99 |\n", *rounds, *n, *producers, *conc)
	fmt.Println("| --- | --- | --- | --- |")
	fmt.Printf("| odek queue (Redis) | %.0f jobs/s | %v | %v |\n", best[0], op50, op99)
	fmt.Printf("| asynq v0.26.0 | %.0f tasks/s | %v | %v |\n", best[1], ap50, ap99)
	fmt.Printf("\nodek / asynq throughput: %.2f×\n", best[0]/best[1])
}

// odekThroughput pushes n no-op jobs (one chat each) through enqueue →
// claim → ack: producers enqueue while conc consumers each claim up to 16
// jobs at a time and acknowledge each from its own goroutine, as a worker
// running jobs concurrently does.
func odekThroughput(c redis.UniversalClient, n, producers, conc int) float64 {
	return odekThroughputWith(c, queue.Options{}, n, producers, conc)
}

func odekThroughputWith(c redis.UniversalClient, o queue.Options, n, producers, conc int) float64 {
	ctx := context.Background()
	q, err := queue.NewRedis(ctx, c, o)
	if err != nil {
		panic(err)
	}
	var next, acked atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range producers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				if _, _, err := q.Enqueue(ctx, queue.Job{ChatID: i, Goal: "noop"}); err != nil {
					panic(err)
				}
			}
		})
	}
	for w := range conc {
		wg.Go(func() {
			name := "c" + strconv.Itoa(w)
			for acked.Load() < int64(n) {
				ls, err := q.Claim(ctx, name, 16, 20*time.Millisecond)
				if err != nil {
					panic(err)
				}
				var aw sync.WaitGroup
				for _, l := range ls {
					aw.Go(func() {
						if err := q.Ack(ctx, l, queue.Result{Answer: "ok"}); err != nil {
							panic(err)
						}
						acked.Add(1)
					})
				}
				aw.Wait()
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// asynqThroughput does the same with asynq: producers call Client.Enqueue,
// a Server with Concurrency conc runs a no-op handler.
func asynqThroughput(opt asynq.RedisConnOpt, n, producers, conc int) float64 {
	cl := asynq.NewClient(opt)
	defer cl.Close()
	var handled atomic.Int64
	done := make(chan struct{})
	srv := asynq.NewServer(opt, asynq.Config{Concurrency: conc, LogLevel: asynq.ErrorLevel})
	mux := asynq.NewServeMux()
	mux.HandleFunc("noop", func(ctx context.Context, t *asynq.Task) error {
		if handled.Add(1) == int64(n) {
			close(done)
		}
		return nil
	})
	start := time.Now()
	if err := srv.Start(mux); err != nil {
		panic(err)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range producers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if _, err := cl.Enqueue(asynq.NewTask("noop", []byte(`{"goal":"noop"}`))); err != nil {
					panic(err)
				}
			}
		})
	}
	wg.Wait()
	<-done
	d := time.Since(start)
	srv.Shutdown()
	return float64(n) / d.Seconds()
}

// odekPickup: a consumer blocked in Claim; time from the start of Enqueue
// to Claim returning the job.
func odekPickup(c *redis.Client, samples int) (p50, p99 time.Duration) {
	ctx := context.Background()
	q, err := queue.NewRedis(ctx, c, queue.Options{})
	if err != nil {
		panic(err)
	}
	var lat []time.Duration
	for i := range samples {
		got := make(chan time.Time, 1)
		go func() {
			for {
				ls, err := q.Claim(ctx, "idle", 1, 5*time.Second)
				if err != nil {
					panic(err)
				}
				if len(ls) == 1 {
					got <- time.Now()
					_ = q.Ack(ctx, ls[0], queue.Result{})
					return
				}
			}
		}()
		time.Sleep(5 * time.Millisecond) // the consumer is idle, blocked in XREADGROUP
		start := time.Now()
		if _, _, err := q.Enqueue(ctx, queue.Job{ChatID: int64(i + 1), Goal: "noop"}); err != nil {
			panic(err)
		}
		lat = append(lat, (<-got).Sub(start))
	}
	return percentiles(lat)
}

// asynqPickup: an idle asynq server; time from the start of Enqueue to the
// handler running.
func asynqPickup(addr string, samples int) (p50, p99 time.Duration) {
	opt := asynq.RedisClientOpt{Addr: addr}
	cl := asynq.NewClient(opt)
	defer cl.Close()
	got := make(chan time.Time, 1)
	srv := asynq.NewServer(opt, asynq.Config{Concurrency: 4, LogLevel: asynq.ErrorLevel})
	mux := asynq.NewServeMux()
	mux.HandleFunc("noop", func(ctx context.Context, t *asynq.Task) error { got <- time.Now(); return nil })
	if err := srv.Start(mux); err != nil {
		panic(err)
	}
	defer srv.Shutdown()
	var lat []time.Duration
	for range samples {
		time.Sleep(1500 * time.Millisecond) // let the server go idle
		start := time.Now()
		if _, err := cl.Enqueue(asynq.NewTask("noop", nil)); err != nil {
			panic(err)
		}
		lat = append(lat, (<-got).Sub(start))
	}
	return percentiles(lat)
}

func percentiles(lat []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(lat)
	return lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)*99/100].Round(time.Microsecond)
}

// startRedis runs a throwaway redis-server (no persistence) on a free port.
func startRedis(extra ...string) (addr string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "queuebench")
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	cmd.Args = append(cmd.Args, extra...)
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start redis-server: %w", err)
	}
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); c.Ping(context.Background()).Err() != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			return "", nil, fmt.Errorf("redis-server on %s did not answer", addr)
		}
	}
	return addr, func() { cmd.Process.Kill(); cmd.Wait(); os.RemoveAll(dir) }, nil
}

// clusterVsSingle runs odek's throughput on one node and on a 3-master
// cluster, alternating, and prints the best of each and their ratio.
func clusterVsSingle(n, producers, conc, rounds int) error {
	ctx := context.Background()
	addr, stop, err := startRedis()
	if err != nil {
		return err
	}
	defer stop()
	single := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
	defer single.Close()
	var addrs []string
	for range 3 {
		a, stop, err := startRedis("--cluster-enabled", "yes", "--cluster-node-timeout", "15000") // no failover here: a loaded machine must not mark a node failed
		if err != nil {
			return err
		}
		defer stop()
		addrs = append(addrs, a)
	}
	if err := formCluster(ctx, addrs); err != nil {
		return err
	}
	cc, _, err := queue.NewRedisClient("redis+cluster://" + strings.Join(addrs, ",") + "?pool_size=64")
	if err != nil {
		return err
	}
	defer cc.Close()
	flush := func(c redis.UniversalClient) {
		if k, ok := c.(*redis.ClusterClient); ok {
			_ = k.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.FlushAll(ctx).Err() })
			return
		}
		c.FlushAll(ctx)
	}
	asynqSingle := asynq.RedisClientOpt{Addr: addr, PoolSize: 64}
	asynqCluster := asynq.RedisClusterClientOpt{Addrs: addrs}
	var best [4]float64
	for r := 0; r < rounds; r++ {
		flush(single)
		s := odekThroughput(single, n, producers, conc)
		flush(cc)
		c := odekThroughput(cc, n, producers, conc)
		flush(single)
		as := asynqThroughput(asynqSingle, n, producers, conc)
		flush(cc)
		ac := asynqThroughput(asynqCluster, n, producers, conc)
		fmt.Printf("round %d: odek one node %.0f, odek 3-master cluster %.0f jobs/s; asynq one node %.0f, asynq cluster %.0f tasks/s\n", r+1, s, c, as, ac)
		for i, v := range []float64{s, c, as, ac} {
			best[i] = max(best[i], v)
		}
	}
	fmt.Printf("\n| queue | one node | 3-master cluster | cluster / one node |\n")
	fmt.Println("| --- | --- | --- | --- |")
	fmt.Printf("| odek | %.0f jobs/s | %.0f jobs/s | %.2f× |\n", best[0], best[1], best[1]/best[0])
	fmt.Printf("| asynq v0.26.0 | %.0f tasks/s | %.0f tasks/s | %.2f× |\n", best[2], best[3], best[3]/best[2])
	fmt.Printf("\n(best of %d, %d jobs, %d producers, concurrency %d)\nodek / asynq on the cluster: %.2f×\n", rounds, n, producers, conc, best[1]/best[3])
	return nil
}

// waitVsNoWait runs odek's throughput on a master with one replica, with
// user-visible writes waiting for the replica (WAIT 1 on the write's
// connection, the default when a replica exists) and without
// (MinReplicas -1), alternating, and prints the best of each.
func waitVsNoWait(n, producers, conc, rounds int) error {
	ctx := context.Background()
	addr, stop, err := startRedis()
	if err != nil {
		return err
	}
	defer stop()
	host, port, _ := net.SplitHostPort(addr)
	raddr, stopR, err := startRedis("--replicaof", host, port)
	if err != nil {
		return err
	}
	defer stopR()
	rc := redis.NewClient(&redis.Options{Addr: raddr})
	defer rc.Close()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		info, _ := rc.Info(ctx, "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replica did not sync")
		}
	}
	c, _, err := queue.NewRedisClient("redis://" + addr + "?pool_size=64")
	if err != nil {
		return err
	}
	defer c.Close()
	var best [2]float64
	for r := 0; r < rounds; r++ {
		c.FlushAll(ctx)
		off := odekThroughputWith(c, queue.Options{MinReplicas: -1}, n, producers, conc)
		c.FlushAll(ctx)
		on := odekThroughputWith(c, queue.Options{MinReplicas: 1}, n, producers, conc)
		fmt.Printf("round %d: no wait %.0f jobs/s, WAIT 1 %.0f jobs/s\n", r+1, off, on)
		best[0], best[1] = max(best[0], off), max(best[1], on)
	}
	st := queue.Replication(c)
	fmt.Printf("\n| odek queue, master + 1 replica | throughput (best of %d, %d jobs, %d producers, concurrency %d) |\n", rounds, n, producers, conc)
	fmt.Println("| --- | --- |")
	fmt.Printf("| writes not waiting | %.0f jobs/s |\n| enqueue and ack wait for the replica | %.0f jobs/s |\n", best[0], best[1])
	fmt.Printf("\nwith WAIT / without: %.2f× (writes confirmed %d, unconfirmed %d)\n", best[1]/best[0], st.Confirmed, st.Unconfirmed)
	return nil
}

// formCluster joins three cluster-enabled nodes and splits the slots
// between them.
func formCluster(ctx context.Context, addrs []string) error {
	cs := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		cs[i] = redis.NewClient(&redis.Options{Addr: a})
		defer cs[i].Close()
	}
	host, port, _ := net.SplitHostPort(addrs[0])
	for _, c := range cs[1:] {
		if err := c.ClusterMeet(ctx, host, port).Err(); err != nil {
			return fmt.Errorf("cluster meet: %w", err)
		}
	}
	per := 16384 / len(cs)
	for i, c := range cs {
		lo, hi := i*per, (i+1)*per-1
		if i == len(cs)-1 {
			hi = 16383
		}
		if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("cluster addslotsrange: %w", err)
		}
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ok := true
		for _, c := range cs {
			info, err := c.ClusterInfo(ctx).Result()
			ok = ok && err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:3")
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster did not form")
		}
	}
}
