package embedded

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/odekrun/odek/queue"
)

// Buckets of the store file. Every value the queue writes is one of these
// records; a change of format bumps formatVersion.
var (
	bMeta    = []byte("meta")    // "format", "seq"
	bJobs    = []byte("jobs")    // job id -> jobRec (unfinished jobs)
	bDone    = []byte("done")    // job id -> jobRec (finished jobs, for Retain)
	bDoneIdx = []byte("doneidx") // be64(done unix ns) + job id -> "" (retention order)
	bResults = []byte("results") // be64(result seq) -> job id (results not yet acknowledged)
	bIdem    = []byte("idem")    // idempotency key -> be64(expires unix ns) + job id
	bDead    = []byte("dead")    // be64(seq) -> DeadLetter JSON
	bSent    = []byte("sent")    // be64(result seq) -> queue.Sent JSON (a result's delivery progress)
	// kvPrefix starts the buckets of the key-value API (the bot's state
	// and status ledger).
	kvPrefix = "kv:"
)

// formatVersion is the layout above; Open refuses a file of another one.
const formatVersion = 1

// maxRecordBytes bounds one record read back from the file (a job or a
// result is at most MaxPayloadBytes, plus history).
const maxRecordBytes = 4 << 20

// jobRec is a job as stored: the queue's journal record, as JSON.
type jobRec = queue.JobRecord

func be64(n uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return b[:]
}

func doneIdxKey(at time.Time, id string) []byte {
	return append(be64(uint64(max(at.UnixNano(), 0))), id...)
}

func idemVal(id string, expires time.Time) []byte {
	return append(be64(uint64(max(expires.UnixNano(), 0))), id...)
}

// parseIdem decodes an idem value. Pure.
func parseIdem(v []byte) (id string, expires time.Time, err error) {
	if len(v) < 9 || len(v) > 8+queue.MaxIDLen {
		return "", time.Time{}, fmt.Errorf("embedded store: idempotency record of %d bytes (want 9..%d)", len(v), 8+queue.MaxIDLen)
	}
	return string(v[8:]), time.Unix(0, int64(binary.BigEndian.Uint64(v[:8]))), nil
}

// parseJobRec decodes a job record read from the file. Pure.
func parseJobRec(v []byte) (jobRec, error) {
	var r jobRec
	if len(v) > maxRecordBytes {
		return r, fmt.Errorf("embedded store: job record of %d bytes (limit %d)", len(v), maxRecordBytes)
	}
	if err := json.Unmarshal(v, &r); err != nil {
		return r, fmt.Errorf("embedded store: job record is not valid JSON: %w", err)
	}
	if r.Job.ID == "" || r.Job.ChatID == 0 {
		return r, fmt.Errorf("embedded store: job record names no job (id %q, chat %d)", r.Job.ID, r.Job.ChatID)
	}
	switch r.State {
	case queue.StateQueued, queue.StateReady, queue.StateRunning, queue.StateSuspect:
	case queue.StateDone:
		if r.Result == nil {
			return r, fmt.Errorf("embedded store: finished job %s has no result", r.Job.ID)
		}
	default:
		return r, fmt.Errorf("embedded store: job %s has unknown state %q", r.Job.ID, r.State)
	}
	return r, nil
}

// write is one pending change: val nil deletes key.
type write struct {
	val []byte
	del bool
}

// batch is the changes of one commit, by bucket and key.
type batch map[string]map[string]write

func (b batch) put(bucket []byte, key, val []byte) {
	m := b[string(bucket)]
	if m == nil {
		m = map[string]write{}
		b[string(bucket)] = m
	}
	m[string(key)] = write{val: val}
}

func (b batch) del(bucket []byte, key []byte) {
	m := b[string(bucket)]
	if m == nil {
		m = map[string]write{}
		b[string(bucket)] = m
	}
	m[string(key)] = write{del: true}
}

// apply writes b in tx.
func (b batch) apply(tx *bolt.Tx) error {
	for name, ws := range b {
		bk, err := tx.CreateBucketIfNotExists([]byte(name))
		if err != nil {
			return err
		}
		for k, w := range ws {
			if w.del {
				err = bk.Delete([]byte(k))
			} else {
				err = bk.Put([]byte(k), w.val)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// purgeDone deletes finished jobs older than cutoff, at most n per call.
func purgeDone(tx *bolt.Tx, cutoff time.Time, n int) error {
	idx, done := tx.Bucket(bDoneIdx), tx.Bucket(bDone)
	if idx == nil || done == nil {
		return nil
	}
	limit := uint64(max(cutoff.UnixNano(), 0))
	c := idx.Cursor()
	var old [][]byte
	for k, _ := c.First(); k != nil && len(old) < n; k, _ = c.Next() {
		if len(k) < 8 || binary.BigEndian.Uint64(k[:8]) >= limit {
			break
		}
		old = append(old, append([]byte(nil), k...))
	}
	for _, k := range old {
		if err := done.Delete(k[8:]); err != nil {
			return err
		}
		if err := idx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
