package queue

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis deployment modes a RedisURL names.
const (
	ModeSingle   = "single"   // one node (or a managed endpoint that hides its replicas)
	ModeSentinel = "sentinel" // a master found through Redis Sentinel
	ModeCluster  = "cluster"  // Redis Cluster, from a list of seed nodes
)

// ClusterStateReload is how often a cluster client reloads the slot map
// when no MOVED/ASK reply told it to. go-redis' default (60 s) keeps
// dialling a dead master for up to a minute after a failover.
const ClusterStateReload = time.Second

// MaxRedisURLBytes bounds a REDIS_URL.
const MaxRedisURLBytes = 8 << 10

// RedisURL is a parsed REDIS_URL. Every odek component connects through
// NewClient, so the three deployment modes and TLS are handled in one
// place. The accepted forms:
//
//	redis://[user:password@]host:port[/db][?option=value...]    one node
//	rediss://...                                                 one node over TLS
//	redis+sentinel://[user:password@]host:port[,host:port...]/master[/db][?password=...]
//	rediss+sentinel://...                                        the same over TLS
//	redis+cluster://[user:password@]host:port[,host:port...][?option=value...]
//	rediss+cluster://...                                         the same over TLS
//
// "redis-sentinel" and "redis-cluster" (and their rediss- forms) are
// accepted for "+". For Sentinel the user info authenticates to the
// sentinels and the password parameter (with the username parameter) to
// the master and replicas, as go-redis' ParseFailoverURL does; the master
// name is the first path segment (or the master_name parameter). Options
// are go-redis' URL options (dial_timeout, pool_size, max_retries...),
// plus two of odek's for TLS: tls_ca (a PEM file of CAs to trust instead
// of the system's) and tls_server_name (the name to verify in every node's
// certificate; without it each node is verified by the host it is dialled
// at), and two for durability: min_replicas ("auto", the default, or a
// number 0-16: the replicas a queue write the user sees acknowledged waits
// for) and replica_timeout (a Go duration, 1ms-10s, default 1s). There is
// no option to skip verification.
type RedisURL struct {
	// Mode is ModeSingle, ModeSentinel or ModeCluster.
	Mode string
	// Addrs are the node (single), sentinel or seed node addresses.
	Addrs []string
	// Master is the Sentinel master name ("" unless ModeSentinel).
	Master string
	// TLS is true for the rediss schemes.
	TLS bool
	// Replicas are the min_replicas and replica_timeout options: how many
	// replicas a user-visible queue write waits for (MinReplicas -1, the
	// default, decides from the topology). See Options.MinReplicas.
	Replicas ReplicaOptions

	single   *redis.Options
	failover *redis.FailoverOptions
	cluster  *redis.ClusterOptions
}

// RedisURLError says which part of a REDIS_URL is wrong. It never holds the
// URL itself, which may carry a password.
type RedisURLError struct {
	Part   string // "scheme", "host", "path", "option tls_ca", ...
	Reason string
}

func (e *RedisURLError) Error() string {
	return "queue: REDIS_URL " + e.Part + ": " + e.Reason
}

func urlErr(part, format string, a ...any) error {
	return &RedisURLError{Part: part, Reason: fmt.Sprintf(format, a...)}
}

// ParseRedisURL parses a REDIS_URL of any of the forms RedisURL lists.
func ParseRedisURL(raw string) (*RedisURL, error) {
	if raw == "" {
		return nil, urlErr("", "empty")
	}
	if len(raw) > MaxRedisURLBytes {
		return nil, urlErr("", "%d bytes, over the limit of %d", len(raw), MaxRedisURLBytes)
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, urlErr("scheme", "missing \"://\"; want redis://, rediss://, redis+sentinel:// or redis+cluster://")
	}
	u := &RedisURL{Mode: ModeSingle}
	base := strings.ToLower(scheme)
	switch {
	case base == "redis" || base == "rediss":
	case strings.HasSuffix(base, "+sentinel"), strings.HasSuffix(base, "-sentinel"):
		u.Mode, base = ModeSentinel, base[:len(base)-len("+sentinel")]
	case strings.HasSuffix(base, "+cluster"), strings.HasSuffix(base, "-cluster"):
		u.Mode, base = ModeCluster, base[:len(base)-len("+cluster")]
	default:
		return nil, urlErr("scheme", "%q is not one of redis, rediss, redis+sentinel, rediss+sentinel, redis+cluster, rediss+cluster", clip(scheme, 40))
	}
	switch base {
	case "redis":
	case "rediss":
		u.TLS = true
	default:
		return nil, urlErr("scheme", "%q is not one of redis, rediss, redis+sentinel, rediss+sentinel, redis+cluster, rediss+cluster", clip(scheme, 40))
	}

	// Split authority, path and query by hand: a list of hosts is not a
	// URL host that net/url accepts.
	authority, tailPart := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tailPart = rest[:i], rest[i:]
	}
	userinfo, hosts := "", authority
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		userinfo, hosts = authority[:i], authority[i+1:]
	}
	if strings.Contains(tailPart, "#") {
		return nil, urlErr("fragment", "a REDIS_URL has no #fragment")
	}
	var addrs []string
	for _, h := range strings.Split(hosts, ",") {
		addr, err := hostPort(h)
		if err != nil {
			return nil, err
		}
		addrs = append(addrs, addr)
	}
	if len(addrs) > 1 && u.Mode == ModeSingle {
		return nil, urlErr("host", "%d hosts given; a list of hosts needs redis+sentinel:// or redis+cluster://", len(addrs))
	}
	path, query, _ := strings.Cut(tailPart, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, urlErr("query", "%v", err)
	}
	reps, err := replicaQuery(q)
	if err != nil {
		return nil, err
	}
	u.Replicas = reps
	var tlsCA, tlsName string
	for _, k := range []string{"tls_ca", "tls_server_name"} {
		if vs, ok := q[k]; ok {
			if !u.TLS {
				return nil, urlErr("option "+k, "needs a rediss scheme")
			}
			if len(vs) != 1 || vs[0] == "" {
				return nil, urlErr("option "+k, "want exactly one non-empty value")
			}
			if k == "tls_ca" {
				tlsCA = vs[0]
			} else {
				tlsName = vs[0]
			}
			q.Del(k)
		}
	}
	if _, err := url.Parse("redis://" + userinfo + "@h"); userinfo != "" && err != nil {
		return nil, urlErr("user info", "not valid (percent-encode special characters in the password)")
	}
	segs := strings.FieldsFunc(path, func(r rune) bool { return r == '/' })

	// Rebuild a URL go-redis parses for every option it knows.
	std := url.URL{Scheme: base, Host: addrs[0]}
	if userinfo != "" {
		pu, _ := url.Parse("redis://" + userinfo + "@h")
		std.User = pu.User
	}
	switch u.Mode {
	case ModeSingle:
		if len(segs) > 1 {
			return nil, urlErr("path", "want at most a database number, got %d segments", len(segs))
		}
		if len(segs) == 1 {
			if _, err := strconv.Atoi(segs[0]); err != nil {
				return nil, urlErr("path", "database %q is not a number", clip(segs[0], 20))
			}
			std.Path = "/" + segs[0]
		}
		std.RawQuery = q.Encode()
		o, err := redis.ParseURL(std.String())
		if err != nil {
			return nil, urlErr("option", "%s", scrub(err))
		}
		u.single = o
	case ModeSentinel:
		if len(segs) > 0 {
			if q.Has("master_name") {
				return nil, urlErr("path", "master name given twice (path and master_name)")
			}
			q.Set("master_name", segs[0])
			segs = segs[1:]
		}
		if len(segs) > 1 {
			return nil, urlErr("path", "want /master[/db], got extra segments")
		}
		if len(segs) == 1 {
			if _, err := strconv.Atoi(segs[0]); err != nil {
				return nil, urlErr("path", "database %q is not a number", clip(segs[0], 20))
			}
			std.Path = "/" + segs[0]
		}
		if q.Get("master_name") == "" {
			return nil, urlErr("path", "no master name: write redis+sentinel://host:port/<master name>")
		}
		for _, a := range addrs[1:] {
			q.Add("addr", a)
		}
		std.RawQuery = q.Encode()
		o, err := redis.ParseFailoverURL(std.String())
		if err != nil {
			return nil, urlErr("option", "%s", scrub(err))
		}
		u.failover, u.Master = o, o.MasterName
	case ModeCluster:
		if len(segs) > 0 {
			return nil, urlErr("path", "a cluster has only database 0; remove the path")
		}
		for _, a := range addrs[1:] {
			q.Add("addr", a)
		}
		std.RawQuery = q.Encode()
		o, err := redis.ParseClusterURL(std.String())
		if err != nil {
			return nil, urlErr("option", "%s", scrub(err))
		}
		u.cluster = o
	}
	if u.TLS {
		tc, err := tlsConfig(tlsCA, tlsName, u.Mode, addrs[0])
		if err != nil {
			return nil, err
		}
		switch {
		case u.single != nil:
			u.single.TLSConfig = tc
		case u.failover != nil:
			u.failover.TLSConfig = tc
		case u.cluster != nil:
			u.cluster.TLSConfig = tc
		}
	}
	u.Addrs = addrs
	return u, nil
}

// MaxMinReplicas bounds the min_replicas option.
const MaxMinReplicas = 16

// replicaQuery takes min_replicas and replica_timeout out of q.
func replicaQuery(q url.Values) (ReplicaOptions, error) {
	o := ReplicaOptions{MinReplicas: -1}
	if vs, ok := q["min_replicas"]; ok {
		if len(vs) != 1 {
			return o, urlErr("option min_replicas", "want exactly one value")
		}
		if vs[0] != "auto" {
			n, err := strconv.Atoi(vs[0])
			if err != nil || n < 0 || n > MaxMinReplicas {
				return o, urlErr("option min_replicas", "%q is not \"auto\" or a number 0-%d", clip(vs[0], 20), MaxMinReplicas)
			}
			o.MinReplicas = n
		}
		q.Del("min_replicas")
	}
	if vs, ok := q["replica_timeout"]; ok {
		if len(vs) != 1 {
			return o, urlErr("option replica_timeout", "want exactly one value")
		}
		d, err := time.ParseDuration(vs[0])
		if err != nil || d < time.Millisecond || d > 10*time.Second {
			return o, urlErr("option replica_timeout", "%q is not a duration from 1ms to 10s (such as 500ms)", clip(vs[0], 20))
		}
		o.Timeout = d
		q.Del("replica_timeout")
	}
	return o, nil
}

// hostPort validates one host[:port] of a REDIS_URL (port 6379 if none;
// sentinels default to 26379 too in practice, but a port is then needed).
func hostPort(h string) (string, error) {
	if h == "" {
		return "", urlErr("host", "empty host (want host:port)")
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		if strings.Contains(err.Error(), "missing port") {
			host, port = strings.Trim(h, "[]"), "6379"
		} else {
			return "", urlErr("host", "%q is not host:port", clip(h, 80))
		}
	}
	if host == "" {
		return "", urlErr("host", "%q has no host name", clip(h, 80))
	}
	if strings.ContainsAny(host, " \t\r\n%/?#@[]") {
		return "", urlErr("host", "%q holds characters a host name cannot", clip(host, 80))
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", urlErr("port", "%q is not a port number 1-65535", clip(port, 20))
	}
	return net.JoinHostPort(host, port), nil
}

// tlsConfig builds the TLS settings of every connection of a client. The
// server name is fixed only when the URL says so (or for one node);
// otherwise each node is verified by the host it is dialled at, since a
// sentinel, a master and cluster nodes each answer on their own names.
func tlsConfig(caFile, serverName, mode, firstAddr string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if serverName == "" && mode == ModeSingle {
		tc.ServerName, _, _ = net.SplitHostPort(firstAddr)
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, urlErr("option tls_ca", "%v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, urlErr("option tls_ca", "%s holds no PEM certificate", caFile)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// scrub returns err's text without anything that looks like the URL (which
// go-redis errors sometimes quote).
func scrub(err error) string {
	s := strings.TrimPrefix(err.Error(), "redis: ")
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[:max(0, strings.LastIndex(s[:i], " "))] + " <url>"
	}
	return s
}

// String is the URL's shape for logs and doctor: mode, addresses and
// master name, never credentials.
func (u *RedisURL) String() string {
	s := u.Mode + " " + strings.Join(u.Addrs, ",")
	if u.Master != "" {
		s += " master " + u.Master
	}
	if u.TLS {
		s += " (TLS)"
	}
	return s
}

// NewClient returns a client for u with odek's defaults: commands that
// fail for a transient reason (a broken connection, READONLY, LOADING,
// MASTERDOWN, CLUSTERDOWN, TRYAGAIN) are retried by go-redis with backoff
// up to 5 times (a cluster client: up to 12 attempts, each routed afresh,
// see newClusterClient); a cluster client reloads its slot map every
// ClusterStateReload and on any node's connection error. The caller
// closes it.
func (u *RedisURL) NewClient() redis.UniversalClient {
	c := u.newClient()
	if u.Replicas != (ReplicaOptions{MinReplicas: -1}) {
		setURLReplicas(c, u.Replicas)
	}
	return c
}

func (u *RedisURL) newClient() redis.UniversalClient {
	switch {
	case u.failover != nil:
		o := *u.failover
		defaultRetries(&o.MaxRetries, &o.MinRetryBackoff, &o.MaxRetryBackoff)
		return redis.NewFailoverClient(&o)
	case u.cluster != nil:
		return newClusterClient(*u.cluster)
	default:
		o := *u.single
		return redis.NewClient(&o)
	}
}

// Cluster client defaults (each applies only when the URL leaves the
// option unset). The cluster client retries a command itself, re-routing
// it by its slot map on every attempt; a node's own retries (go-redis'
// MaxRetries, and five dial tries per connection) would keep a command on
// a dead master for seconds after its replica took over, so nodes do not
// retry, dial once with a short timeout, and any node's connection error
// reloads the slot map at once.
const (
	clusterAttempts        = 12                     // MaxRedirects: attempts per command
	clusterMaxRetryBackoff = 250 * time.Millisecond // between attempts: 12 cover about 2.5 s
	clusterDialTimeout     = 2 * time.Second
)

func newClusterClient(o redis.ClusterOptions) *redis.ClusterClient {
	if o.MaxRetries == 0 {
		o.MaxRetries = -1 // nodes do not retry; the cluster client does
	}
	if o.MinRetryBackoff == 0 {
		o.MinRetryBackoff = 20 * time.Millisecond
	}
	if o.MaxRetryBackoff == 0 {
		o.MaxRetryBackoff = clusterMaxRetryBackoff
	}
	if o.DialerRetries == 0 {
		o.DialerRetries = 1
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = clusterDialTimeout
	}
	if o.ClusterStateReloadInterval == 0 {
		o.ClusterStateReloadInterval = ClusterStateReload
	}
	if o.MaxRedirects == 0 {
		o.MaxRedirects = clusterAttempts
	}
	var cc atomic.Pointer[redis.ClusterClient]
	newNode := o.NewClient
	if newNode == nil {
		newNode = redis.NewClient
	}
	o.NewClient = func(no *redis.Options) *redis.Client {
		n := newNode(no)
		n.AddHook(reloadOnError{&cc})
		return n
	}
	c := redis.NewClusterClient(&o)
	cc.Store(c)
	return c
}

// reloadOnError is a cluster node's hook: a connection to the node that
// cannot be made or breaks, or a reply that says the node no longer
// serves the slot, asks the cluster client for a new slot map now (go-redis
// reloads it on MOVED and READONLY only, else at the next periodic
// reload).
type reloadOnError struct {
	cc *atomic.Pointer[redis.ClusterClient]
}

func (h reloadOnError) reload(err error) {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || !Unreachable(err) {
		return
	}
	if c := h.cc.Load(); c != nil {
		c.ReloadState(context.Background())
	}
}

func (h reloadOnError) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cn, err := next(ctx, network, addr)
		h.reload(err)
		return cn, err
	}
}

func (h reloadOnError) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.reload(err)
		return err
	}
}

func (h reloadOnError) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.reload(err)
		return err
	}
}

func defaultRetries(n *int, lo, hi *time.Duration) {
	if *n == 0 {
		*n = 5
	}
	if *lo == 0 {
		*lo = 50 * time.Millisecond
	}
	if *hi == 0 {
		*hi = time.Second
	}
}

// NewRedisClient parses raw and returns its client: the one way odek's
// commands connect to Redis.
func NewRedisClient(raw string) (redis.UniversalClient, *RedisURL, error) {
	u, err := ParseRedisURL(raw)
	if err != nil {
		return nil, nil, err
	}
	return u.NewClient(), u, nil
}

// ClientAddr names where c points, for messages: the node, the sentinels'
// master name, or the cluster's seeds.
func ClientAddr(c redis.UniversalClient) string {
	switch c := c.(type) {
	case *redis.Client:
		if a := c.Options().Addr; a != "FailoverClient" { // go-redis' name for a Sentinel-backed client
			return a
		}
		return "the master the sentinels name"
	case *redis.ClusterClient:
		return "cluster " + strings.Join(c.Options().Addrs, ",")
	}
	return fmt.Sprintf("%T", c)
}
