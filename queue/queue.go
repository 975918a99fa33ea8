// Package queue carries odek jobs from a front end (the Telegram bot, `odek
// queue submit`) to workers and carries results and progress back.
//
// Two implementations share one behaviour, checked by the conformance suite
// in queue/queuetest: Redis (Redis Streams with a consumer group, for
// distributed workers) and Memory (in-process, the embedded default when no
// REDIS_URL is set).
//
// # Delivery model
//
// A job is enqueued once per idempotency key within the dedupe window. Jobs
// of one chat run one at a time in arrival order; jobs of other chats are not
// held up behind them. A worker claims a job and holds a lease on it that it
// renews with Heartbeat; a lease not renewed for LeaseTTL makes the job a
// suspect, which the next Claim of an idle worker takes over alone
// (Lease.Suspect), with Job.Attempt raised by one. A job whose worker died
// MaxAttempts times while it ran alone goes to the dead-letter stream and a
// failure Result is published instead; deaths beside other jobs are not
// counted, so a poison job does not take its neighbours down with it. Exactly one Result is published per job: the
// first of Ack, dead-lettering and cancellation wins; a worker whose lease
// was lost gets ErrLeaseLost from Heartbeat and Ack and its result is dropped.
// docs/QUEUE.md states the guarantees and the Redis keys precisely.
//
// Both queues also implement Operator (stats, dead letters, retry, a
// finished job's result) for the operator CLI, Approvals (a worker asks the
// job's chat and waits; no answer in time means deny), ProgressBatcher
// (many progress entries per round trip) and DeadLetterCounter. Progress
// entries are odek.event/v1 lines or ProgressSummary objects.
//
// On Redis, concurrent script calls of one Redis value share a pipelined
// round trip (see coalescer), which is where most of its throughput comes
// from. The writes a user is told of (Enqueue, Ack, Cancel, AckResult)
// wait until a replica holds them, with WAIT on the write's own connection
// (Options.MinReplicas; on by default when the master has a replica), so
// a master's failover does not lose them; a wait that times out is
// counted (Replication), not failed.
//
// # Connecting
//
// Every odek component connects through ParseRedisURL / NewRedisClient: one
// node (redis://, rediss://), a Sentinel-discovered master
// (redis+sentinel://) or Redis Cluster (redis+cluster://), TLS in each. The
// queue's keys share one hash tag (KeyPrefix) and every script declares
// its key, so the same code runs on all three; NewRedis refuses data in the
// untagged layout of older versions (ErrLegacyLayout; Migrate moves it).
// DescribeRedis and TopologyWatcher report the deployment for health,
// metrics and doctor. A cluster client from NewRedisClient follows a
// failover within moments of the promotion (its nodes do not retry on their
// own; any node's connection error reloads the slot map), and Migrate moves
// an old layout on one node or across a cluster's slots.
//
// # Concurrency and ownership
//
// Both implementations are safe for concurrent use by many goroutines (and,
// for Redis, many processes). A Lease belongs to the consumer that claimed it;
// pass it back unchanged. Byte slices handed to the queue are not retained
// after the call returns; returned values are owned by the caller.
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Queue is the contract both implementations satisfy. Workers use Claim,
// Heartbeat, Ack and PublishProgress; front ends use Enqueue, Cancel,
// ReadResults, AckResult and ReadProgress.
type Queue interface {
	// Enqueue validates and stores job. It fills an empty ID and a zero
	// CreatedAt. If job.IdempotencyKey was seen within the dedupe window,
	// nothing is stored and the earlier job is returned with dup true.
	Enqueue(ctx context.Context, job Job) (stored Job, dup bool, err error)
	// Claim first settles the jobs whose leases expired (each becomes a
	// suspect, or is dead-lettered after MaxAttempts deaths alone) and, if
	// consumer holds no lease, returns one suspect alone (Lease.Suspect;
	// the consumer must claim nothing else until it is finished). Otherwise
	// it waits up to block for new jobs (block <= 0: do not wait). It
	// returns at most max leases, possibly none.
	Claim(ctx context.Context, consumer string, max int, block time.Duration) ([]Lease, error)
	// Heartbeat renews the lease. It returns ErrLeaseLost when another
	// worker owns the job now, and ErrCanceled when the job's cancellation
	// was requested (the lease is still renewed; finish with Ack).
	Heartbeat(ctx context.Context, l Lease) error
	// Ack finishes the job with res (JobID, ChatID and Attempt are filled
	// from the lease) and lets the chat's next job run. It returns
	// ErrLeaseLost if the lease was lost; the result is then not published.
	Ack(ctx context.Context, l Lease, res Result) error
	// Cancel cancels a job by id. A job still waiting is finished at once
	// with a StatusCanceled result; a running job's worker learns it from
	// its next Heartbeat. ErrNotFound when the job is unknown or finished.
	Cancel(ctx context.Context, jobID string) error
	// PublishProgress appends data (an odek.event/v1 line or a summary) to
	// the job's bounded progress stream.
	PublishProgress(ctx context.Context, jobID string, data []byte) error
	// ReadProgress returns progress entries of jobID after the entry id
	// after ("" or "0" for the start), waiting up to block for one.
	ReadProgress(ctx context.Context, jobID, after string, max int, block time.Duration) ([]Progress, error)
	// ReadResults returns results for this front-end consumer: first results
	// another consumer read but did not acknowledge within the result lease,
	// then new ones, waiting up to block. Results already acknowledged by
	// any consumer are skipped.
	ReadResults(ctx context.Context, consumer string, max int, block time.Duration) ([]Delivery, error)
	// AckResult records that d's result reached the chat.
	AckResult(ctx context.Context, d Delivery) error
}

// Job is one unit of work: a goal for one chat. It is the wire format of the
// jobs stream (JSON).
type Job struct {
	// ID is unique per job: [A-Za-z0-9_.:-], at most 128 bytes. Enqueue
	// fills an empty ID with 32 random hex digits.
	ID     string `json:"id"`
	ChatID int64  `json:"chat_id"`
	UserID int64  `json:"user_id,omitempty"`
	// Goal is the task for the agent; it must not be empty.
	Goal      string `json:"goal"`
	SessionID string `json:"session_id,omitempty"`
	// Budget holds the job's own limits, which may only lower the
	// worker's; nil means the worker's limits.
	Budget *Budget `json:"budget,omitempty"`
	// Attempt is 1 on the first claim and rises by one per reclaim. Set by
	// the queue; ignored by Enqueue.
	Attempt int `json:"attempt"`
	// IdempotencyKey (the chat update id) dedupes enqueues within
	// Options.DedupeWindow; empty means no dedupe.
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	// Model is the model the front end chose for this job (Telegram's
	// /model); a worker runs it only when its operator allows that model
	// (host.JobRunner.AllowedModels), else its own default. Empty means
	// the worker's default.
	Model string `json:"model,omitempty"`
	// Images are pictures the user sent with the goal, as paths relative
	// to the job's chat directory (uploads/photo-12.jpg): a worker sends
	// them to the model as image parts of the goal's message. Vision is
	// "true" (send them) or "auto" (send them, and again without them if
	// the model refuses images); empty sends none.
	Images []string `json:"images,omitempty"`
	Vision string   `json:"vision,omitempty"`
	// Trace is the W3C trace context of whoever enqueued the job
	// ({"traceparent": …, "tracestate": …}, internal/telemetry.ToMap), so
	// the worker's spans join the front end's trace (issue 24). The worker
	// ignores a malformed or oversized value; empty means no trace.
	Trace map[string]string `json:"trace,omitempty"`
	// Kind is what the worker does with the job: "" runs the goal as a
	// turn of the chat's conversation; KindCompact folds the oldest turns
	// of the conversation into its digest with one side call to the
	// worker's model and runs no agent (the goal is ignored). A front end
	// without a model key of its own (the compose bot) asks for a
	// compaction this way.
	Kind string `json:"kind,omitempty"`
	// OutputSchema, when set, is a JSON Schema (a JSON object of at most
	// MaxOutputSchemaBytes, draft 2020-12 unless its $schema says
	// otherwise, no external $ref) the job's final answer must be valid
	// against (issue 28, as `odek run --output-schema`): the worker gives
	// the model up to OutputRepairs corrective turns, then fails the job
	// with exit code 5 and an error starting "output_invalid". A valid
	// answer is also in Result.Output. The worker rejects a schema it
	// cannot compile as a setup failure (exit code 3).
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// OutputRepairs is the number of corrective turns for OutputSchema,
	// 0..MaxOutputRepairs; nil ⇒ 2.
	OutputRepairs *int `json:"output_repairs,omitempty"`
	// Lane is the conversation within the chat the job belongs to (a
	// forum topic): jobs of one chat and lane run one at a time in order,
	// jobs of different lanes in parallel (lane.go). "" = the chat's main
	// lane. At most MaxLaneLen bytes of [A-Za-z0-9_.:-].
	Lane string `json:"lane,omitempty"`
	// Approved names tools a job that nobody can be asked about (a
	// scheduled job, package schedule) may run without confirmation: the
	// schedule's owner approved them ahead. Only front ends and operators
	// set it; a worker denies every other confirmation of such a job.
	Approved []string `json:"approved,omitempty"`
}

// Job kinds (Job.Kind).
const (
	KindCompact = "compact"
)

// Limits of a job's output schema.
const (
	MaxOutputSchemaBytes = 64 << 10
	MaxOutputRepairs     = 5
)

// Status is a Result's outcome.
type Status string

// Result statuses.
const (
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	// StatusCanceled: Cancel was called; Answer may hold partial output.
	StatusCanceled Status = "canceled"
	// StatusDeadLettered: the job's leases expired MaxAttempts times.
	StatusDeadLettered Status = "dead_lettered"
)

// Usage is the model usage and estimated cost of a run.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens,omitempty"`
	CompletionTokens int64 `json:"completion_tokens,omitempty"`
	// CachedTokens is the part of PromptTokens the provider's prompt
	// cache served.
	CachedTokens int64   `json:"cached_tokens,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
}

// ArtifactMeta describes a file a run produced. Path is relative to the
// artifact directory shared by workers and the front end.
type ArtifactMeta struct {
	Path  string `json:"path"`
	Name  string `json:"name,omitempty"`
	MIME  string `json:"mime,omitempty"`
	Bytes int64  `json:"bytes,omitempty"`
	// SHA256 is the lowercase hex digest the worker measured, "" when it
	// did not hash the file (too large). Front ends show a short prefix and
	// check it again before sending the file.
	SHA256 string `json:"sha256,omitempty"`
}

// Result is the outcome of a job, delivered to the front end. It is the wire
// format of the results stream (JSON).
type Result struct {
	JobID      string         `json:"job_id"`
	ChatID     int64          `json:"chat_id"`
	Status     Status         `json:"status"`
	Answer     string         `json:"answer,omitempty"`
	Error      string         `json:"error,omitempty"`
	ExitCode   int            `json:"exit_code,omitempty"`
	Usage      Usage          `json:"usage,omitempty"`
	DurationMS int64          `json:"duration_ms,omitempty"`
	Attempt    int            `json:"attempt,omitempty"`
	Artifacts  []ArtifactMeta `json:"artifacts,omitempty"`
	// Output is the parsed final answer of a job with an OutputSchema
	// whose answer was valid (compact JSON); empty otherwise.
	Output json.RawMessage `json:"output,omitempty"`
	// Silent: a quiet check-in (package schedule) had nothing to report;
	// front ends show nothing for it.
	Silent bool `json:"silent,omitempty"`
	// NoModel: the job was answered without a model call (a schedule's
	// reminder); front ends show no usage line for it.
	NoModel bool `json:"no_model,omitempty"`
	// CappedBy is the job's Budget.CappedBy, copied by the queue when the
	// result is stored (CappedByUser, CappedByChat or "").
	CappedBy string `json:"capped_by,omitempty"`
}

// Lease is a claimed job. Pass it back unchanged to Heartbeat and Ack.
type Lease struct {
	Job      Job
	Consumer string
	// Suspect is set when the job's previous attempt ended with its
	// worker's death (its lease expired). The queue hands a suspect only to
	// a consumer that holds no other lease, and alone; the consumer MUST
	// claim nothing else until the suspect is finished, so that a death
	// during this attempt is the job's own. See docs/QUEUE.md.
	Suspect bool
	entry   string // stream entry id (Redis) or sequence (Memory)
	token   string // proves ownership; a reclaim issues a new one
}

// Delivery is a result handed to a front-end consumer.
type Delivery struct {
	// ID is the results-stream entry id.
	ID     string
	Result Result
	// Sent is how far an earlier delivery of this result got (the last
	// RecordSent, zero when none): a queue that implements SentRecorder
	// fills it, and the front end resumes after Sent.Steps.
	Sent Sent
}

// Progress is one entry of a job's progress stream.
type Progress struct {
	// ID orders entries; pass the last one seen as ReadProgress's after.
	ID   string
	Data []byte
}

// Errors. Match with errors.Is.
var (
	ErrLeaseLost       = errors.New("queue: lease lost (job reclaimed by another worker or finished)")
	ErrCanceled        = errors.New("queue: job cancellation requested")
	ErrNotFound        = errors.New("queue: job not found or already finished")
	ErrInvalidJob      = errors.New("queue: invalid job")
	ErrPayloadTooLarge = errors.New("queue: payload too large")
)

// PayloadTooLargeError reports an encoded job, result or progress entry over
// Options.MaxPayloadBytes. It matches ErrPayloadTooLarge.
type PayloadTooLargeError struct {
	What  string // "job", "result" or "progress"
	Limit int    // bytes
	Size  int    // bytes observed
}

func (e *PayloadTooLargeError) Error() string {
	return fmt.Sprintf("queue: %s payload is %d bytes, over the MaxPayloadBytes limit of %d", e.What, e.Size, e.Limit)
}

// Is makes errors.Is(err, ErrPayloadTooLarge) true.
func (e *PayloadTooLargeError) Is(target error) bool { return target == ErrPayloadTooLarge }

// Options configure both implementations. The zero value is usable.
type Options struct {
	// Prefix starts every Redis key; "" means "odek:".
	Prefix string
	// Group is the workers' consumer group on the jobs stream; "" means "workers".
	Group string
	// ResultsGroup is the front ends' consumer group on the results stream;
	// "" means "frontends".
	ResultsGroup string
	// LeaseTTL is how long a claimed job stays owned without a Heartbeat
	// before another worker may take it over; 0 means 30s.
	LeaseTTL time.Duration
	// ResultLeaseTTL is how long a front end may hold a read result without
	// AckResult before another front end may take it over; 0 means 30s.
	ResultLeaseTTL time.Duration
	// MaxAttempts is how many times a job's worker may die while the job
	// runs alone (as a suspect) before it is dead-lettered; 0 means 3. The
	// job is claimed at most MaxAttempts+1 times.
	MaxAttempts int
	// DedupeWindow is how long an idempotency key is remembered; 0 means 24h.
	DedupeWindow time.Duration
	// MaxPayloadBytes caps an encoded job, result or progress entry; 0 means
	// 256 KiB.
	MaxPayloadBytes int
	// ProgressMaxLen bounds each job's progress stream (entries, trimmed
	// approximately in Redis); 0 means 1000.
	ProgressMaxLen int64
	// Retain is how long a finished job's record, progress stream and
	// result-delivered marker are kept; 0 means 24h.
	Retain time.Duration
	// ResultsRetain is how long a result stays in the results stream when
	// no front end acknowledges it; 0 means 24h. Trimmed by workers' claims
	// (Redis) whether or not a front end runs.
	ResultsRetain time.Duration
	// DeadRetain is how long a dead-lettered job is kept; 0 means 7 days.
	DeadRetain time.Duration
	// DeadMaxLen bounds the dead letters kept (approximately in Redis); 0
	// means 10000.
	DeadMaxLen int64
	// MinReplicas is how many replicas must hold a user-visible write
	// (Enqueue, Ack, Cancel, AckResult) before Redis's answer returns
	// (WAIT on the write's own connection; Redis only). 0 means the
	// REDIS_URL's min_replicas, else 1 when the master reports a replica
	// at NewRedis and 0 when it reports none; -1 never waits. A wait that
	// times out is not an error: the write stands on the master and is
	// counted (Replication). See docs/QUEUE.md "Durability through
	// failover".
	MinReplicas int
	// ReplicaTimeout bounds one wait; 0 means the URL's replica_timeout,
	// else DefaultReplicaTimeout (1 s).
	ReplicaTimeout time.Duration
	// Now is the clock (Memory's leases and both CreatedAt stamps); nil
	// means time.Now. Redis measures lease idle time on the server clock.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = "odek:"
	}
	if o.Group == "" {
		o.Group = "workers"
	}
	if o.ResultsGroup == "" {
		o.ResultsGroup = "frontends"
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 30 * time.Second
	}
	if o.ResultLeaseTTL <= 0 {
		o.ResultLeaseTTL = 30 * time.Second
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	if o.DedupeWindow <= 0 {
		o.DedupeWindow = 24 * time.Hour
	}
	if o.MaxPayloadBytes <= 0 {
		o.MaxPayloadBytes = 256 << 10
	}
	if o.ProgressMaxLen <= 0 {
		o.ProgressMaxLen = 1000
	}
	if o.Retain <= 0 {
		o.Retain = 24 * time.Hour
	}
	if o.ResultsRetain <= 0 {
		o.ResultsRetain = 24 * time.Hour
	}
	if o.DeadRetain <= 0 {
		o.DeadRetain = 7 * 24 * time.Hour
	}
	if o.DeadMaxLen <= 0 {
		o.DeadMaxLen = 10000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// MaxIDLen is the longest job id accepted.
const MaxIDLen = 128

// validID reports whether id is safe to embed in keys and JSON.
func validID(id string) bool {
	if id == "" || len(id) > MaxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// prepareJob validates job, fills ID and CreatedAt, and encodes it. It is
// shared by both implementations so they reject the same inputs.
func prepareJob(job Job, o Options, newID func() string) (Job, []byte, error) {
	if job.ID == "" {
		job.ID = newID()
	}
	if !validID(job.ID) {
		return job, nil, fmt.Errorf("%w: id %q must be 1..%d bytes of [A-Za-z0-9_.:-]", ErrInvalidJob, clip(job.ID, 40), MaxIDLen)
	}
	if job.ChatID == 0 {
		return job, nil, fmt.Errorf("%w: chat_id is 0", ErrInvalidJob)
	}
	if job.Goal == "" {
		return job, nil, fmt.Errorf("%w: goal is empty", ErrInvalidJob)
	}
	if err := checkLane(job.Lane); err != nil {
		return job, nil, err
	}
	if job.Kind != "" && job.Kind != KindCompact {
		return job, nil, fmt.Errorf("%w: kind %q: want \"\" or %q", ErrInvalidJob, clip(job.Kind, 40), KindCompact)
	}
	if !utf8.ValidString(job.IdempotencyKey) || len(job.IdempotencyKey) > MaxIDLen {
		return job, nil, fmt.Errorf("%w: idempotency_key must be valid UTF-8 of at most %d bytes (got %d bytes)", ErrInvalidJob, MaxIDLen, len(job.IdempotencyKey))
	}
	if err := job.Budget.Validate(); err != nil {
		return job, nil, err
	}
	if err := checkOutputSchema(job); err != nil {
		return job, nil, err
	}
	job.Attempt = 0
	if job.CreatedAt.IsZero() {
		job.CreatedAt = o.Now().UTC()
	}
	b, err := json.Marshal(job)
	if err != nil {
		return job, nil, fmt.Errorf("%w: %v", ErrInvalidJob, err)
	}
	if len(b) > o.MaxPayloadBytes {
		return job, nil, &PayloadTooLargeError{What: "job", Limit: o.MaxPayloadBytes, Size: len(b)}
	}
	return job, b, nil
}

// encodeResult fills res from the lease and encodes it within the cap.
func encodeResult(l Lease, res Result, o Options) (Result, []byte, error) {
	res.JobID, res.ChatID, res.Attempt = l.Job.ID, l.Job.ChatID, l.Job.Attempt
	res.CappedBy = ""
	if l.Job.Budget != nil {
		res.CappedBy = l.Job.Budget.CappedBy
	}
	if res.Status == "" {
		res.Status = StatusSucceeded
	}
	b, err := json.Marshal(res)
	if err != nil {
		return res, nil, fmt.Errorf("queue: encode result: %w", err)
	}
	if len(b) > o.MaxPayloadBytes {
		return res, nil, &PayloadTooLargeError{What: "result", Limit: o.MaxPayloadBytes, Size: len(b)}
	}
	return res, b, nil
}

// reclaimAction is what happens to a job whose lease expired.
type reclaimAction int

const (
	reclaimRetry  reclaimAction = iota // hand to the claiming worker, attempt+1
	reclaimDead                        // dead-letter with a failure result
	reclaimCancel                      // finish with a canceled result
)

// decideReclaim is the rule for an expired lease: a canceled job is finished
// as canceled, a job whose worker died MaxAttempts times while it ran alone
// is dead-lettered, any other becomes a suspect and is retried alone.
// strikes counts those lone deaths, this one included.
func decideReclaim(strikes, maxAttempts int, canceled bool) reclaimAction {
	switch {
	case canceled:
		return reclaimCancel
	case strikes >= maxAttempts:
		return reclaimDead
	default:
		return reclaimRetry
	}
}

func deadResult(j Job, strikes, attempt, maxAttempts int) Result {
	return Result{JobID: j.ID, ChatID: j.ChatID, Status: StatusDeadLettered, Attempt: attempt,
		Error: fmt.Sprintf(deadFormat, strikes, maxAttempts, attempt)}
}

// deadFormat is the dead-letter error; redis.go's reclaim script builds the
// same text.
const deadFormat = "queue: job's worker died %d times while it ran alone (MaxAttempts %d, %d attempts in all); moved to the dead-letter stream"

func canceledResult(j Job, attempt int) Result {
	return Result{JobID: j.ID, ChatID: j.ChatID, Status: StatusCanceled, Attempt: attempt, Error: "queue: canceled before it ran"}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// checkOutputSchema checks what the queue can of a job's output schema:
// its size, that it is one JSON object, and the repairs' range. Whether
// it compiles is the worker's check (package outschema).
func checkOutputSchema(job Job) error {
	if job.OutputSchema == nil {
		if job.OutputRepairs != nil {
			return fmt.Errorf("%w: output_repairs without output_schema", ErrInvalidJob)
		}
		return nil
	}
	if n := len(job.OutputSchema); n > MaxOutputSchemaBytes {
		return fmt.Errorf("%w: output_schema is %d bytes: at most %d (MaxOutputSchemaBytes)", ErrInvalidJob, n, MaxOutputSchemaBytes)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(job.OutputSchema, &obj); err != nil || obj == nil {
		return fmt.Errorf("%w: output_schema must be a JSON object (a JSON Schema)", ErrInvalidJob)
	}
	if r := job.OutputRepairs; r != nil && (*r < 0 || *r > MaxOutputRepairs) {
		return fmt.Errorf("%w: output_repairs is %d: want 0..%d", ErrInvalidJob, *r, MaxOutputRepairs)
	}
	return nil
}
