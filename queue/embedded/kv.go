package embedded

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Key-value buckets for the front end's own state (the bot's chat-state
// snapshot, its status ledger, import markers). Writes go through bbolt's
// batch (concurrent writers share one fsync) and are durable when they
// return; reads see every write that returned.

// MaxKVValueBytes bounds one value (the chat-state snapshot is the largest).
const MaxKVValueBytes = 64 << 20

func kvBucket(name string) ([]byte, error) {
	if name == "" || len(name) > 64 {
		return nil, fmt.Errorf("embedded store: bucket name %q must be 1..64 bytes", clip(name, 70))
	}
	return []byte(kvPrefix + name), nil
}

// Put stores val under key in bucket, durably.
func (s *Store) Put(ctx context.Context, bucket, key string, val []byte) error {
	b, err := kvBucket(bucket)
	if err != nil {
		return err
	}
	if len(val) > MaxKVValueBytes {
		return fmt.Errorf("embedded store: value of %d bytes for %s/%s is over the limit of %d", len(val), bucket, clip(key, 40), MaxKVValueBytes)
	}
	if key == "" {
		return fmt.Errorf("embedded store: empty key in bucket %s", bucket)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.Batch(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(b)
		if err != nil {
			return err
		}
		return bk.Put([]byte(key), val)
	})
}

// Get returns the value of key in bucket, nil when absent.
func (s *Store) Get(ctx context.Context, bucket, key string) ([]byte, error) {
	b, err := kvBucket(bucket)
	if err != nil {
		return nil, err
	}
	var out []byte
	err = s.db.View(func(tx *bolt.Tx) error {
		if bk := tx.Bucket(b); bk != nil {
			if v := bk.Get([]byte(key)); v != nil {
				out = append([]byte{}, v...)
			}
		}
		return nil
	})
	return out, err
}

// Delete removes key from bucket, durably; a missing key is not an error.
func (s *Store) Delete(ctx context.Context, bucket, key string) error {
	b, err := kvBucket(bucket)
	if err != nil {
		return err
	}
	return s.db.Batch(func(tx *bolt.Tx) error {
		bk := tx.Bucket(b)
		if bk == nil {
			return nil
		}
		return bk.Delete([]byte(key))
	})
}

// List calls fn for up to max entries of bucket in key order (max <= 0:
// all). fn must not keep v.
func (s *Store) List(ctx context.Context, bucket string, max int, fn func(k string, v []byte) error) error {
	b, err := kvBucket(bucket)
	if err != nil {
		return err
	}
	return s.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(b)
		if bk == nil {
			return nil
		}
		n := 0
		c := bk.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if max > 0 && n == max {
				return nil
			}
			n++
			if err := fn(string(k), v); err != nil {
				return err
			}
		}
		return nil
	})
}
