package queue

// Helpers for Queue implementations outside this package (queue/embedded),
// so every implementation validates, encodes and reclaims by the same
// rules as Redis and Memory.

// WithDefaults fills every zero option with the value Redis and Memory
// use.
func (o Options) WithDefaults() Options { return o.withDefaults() }

// PrepareJob validates job, fills its ID and CreatedAt (o.Now, zero: now)
// and checks its encoded size against o.MaxPayloadBytes (zero: the
// default), as Enqueue does.
func PrepareJob(job Job, o Options) (Job, error) {
	job, _, err := prepareJob(job, o.withDefaults(), newID)
	return job, err
}

// EncodeResult fills res from the lease (job id, chat, attempt, default
// status) and checks its size, as Ack does.
func EncodeResult(l Lease, res Result, o Options) (Result, error) {
	res, _, err := encodeResult(l, res, o.withDefaults())
	return res, err
}

// ReclaimAction is what happens to a job whose lease expired.
type ReclaimAction int

// Reclaim actions (see DecideReclaim).
const (
	ReclaimRetry  = ReclaimAction(reclaimRetry)  // a suspect, retried alone
	ReclaimDead   = ReclaimAction(reclaimDead)   // dead-lettered
	ReclaimCancel = ReclaimAction(reclaimCancel) // finished as canceled
)

// DecideReclaim is the rule for an expired lease (strikes: the job's lone
// deaths, this one included).
func DecideReclaim(strikes, maxAttempts int, canceled bool) ReclaimAction {
	return ReclaimAction(decideReclaim(strikes, maxAttempts, canceled))
}

// DeadResult is the result of a dead-lettered job.
func DeadResult(j Job, strikes, attempt, maxAttempts int) Result {
	return deadResult(j, strikes, attempt, maxAttempts)
}

// CanceledResult is the result of a job canceled before it ran (or whose
// lease expired after a cancel).
func CanceledResult(j Job, attempt int) Result { return canceledResult(j, attempt) }

// RetryJob is the new job Operator.Retry enqueues for a dead one.
func RetryJob(dead Job) Job { return retryJob(dead) }
