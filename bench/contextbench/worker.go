package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/odekrun/odek/internal/chatdir"
	"github.com/odekrun/odek/queue"
)

// The chat the worker variant talks as, and the session id odek-bot gives
// a private chat's jobs.
const (
	benchChat    = 4242
	benchSession = "telegram:4242:s1"
)

// workerChat is the -worker variant: a real redis-server, a real `odek
// worker`, and each message a job of one chat continuing its session, as
// odek-bot enqueues them. After switchAt messages the worker is stopped
// and a second one continues the chat (its digest included).
type workerChat struct {
	bin, work string
	env       []string
	redis     *exec.Cmd
	worker    *exec.Cmd
	q         *queue.Redis
	rc        *redis.Client
	chatDir   string // the chat's working directory, where the files go
	switchAt  int
	workers   int
}

func startWorkerChat(work, bin string, env []string, switchAt int) (*workerChat, error) {
	rbin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("the -worker variant needs redis-server: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	rdir := filepath.Join(work, "redis")
	os.MkdirAll(rdir, 0o700)
	w := &workerChat{bin: bin, work: work, switchAt: switchAt}
	w.redis = exec.Command(rbin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", rdir, "--save", "",
		"--appendonly", "no", "--daemonize", "no", "--logfile", filepath.Join(rdir, "redis.log"))
	if err := w.redis.Start(); err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	w.rc = redis.NewClient(&redis.Options{Addr: addr})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := queue.WaitRedis(ctx, w.rc, nil); err != nil {
		w.close()
		return nil, fmt.Errorf("redis-server: %w", err)
	}
	if w.q, err = queue.NewRedis(ctx, w.rc, queue.Options{}); err != nil {
		w.close()
		return nil, err
	}
	arts := filepath.Join(work, "artifacts")
	os.MkdirAll(arts, 0o700)
	if w.chatDir, err = chatdir.Ensure(arts, benchChat); err != nil {
		w.close()
		return nil, fmt.Errorf("the chat's directory: %w", err)
	}
	w.env = append(append([]string(nil), env...), "REDIS_URL=redis://"+addr+"/0", "ODEK_ARTIFACTS_DIR="+arts)
	if err := w.startWorker(); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (w *workerChat) startWorker() error {
	w.workers++
	name := "bench-w" + strconv.Itoa(w.workers)
	cmd := exec.Command(w.bin, "worker", "--name", name)
	cmd.Dir = w.work
	cmd.Env = w.env
	logf, err := os.Create(filepath.Join(w.work, name+".log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	w.worker = cmd
	return nil
}

// stopWorker ends the running worker with SIGTERM (its graceful stop)
// and waits for it.
func (w *workerChat) stopWorker() {
	if w.worker == nil {
		return
	}
	w.worker.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { w.worker.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		w.worker.Process.Kill()
		<-done
	}
	w.worker = nil
}

// send enqueues message m as the chat's job and waits for its result.
func (w *workerChat) send(m int, goal string) error {
	if m == w.switchAt+1 {
		w.stopWorker()
		if err := w.startWorker(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	job, _, err := w.q.Enqueue(ctx, queue.Job{ChatID: benchChat, UserID: benchChat, Goal: goal, SessionID: benchSession,
		IdempotencyKey: "contextbench:" + strconv.Itoa(m)})
	if err != nil {
		return err
	}
	for {
		ds, err := w.q.ReadResults(ctx, "contextbench", 1, time.Second)
		if err != nil {
			return fmt.Errorf("waiting for the result: %w", err)
		}
		for _, d := range ds {
			w.q.AckResult(ctx, d)
			if d.Result.JobID != job.ID {
				continue
			}
			if d.Result.Status != queue.StatusSucceeded {
				return fmt.Errorf("job %s: %s: %s (worker log in %s)", job.ID, d.Result.Status, d.Result.Error, w.work)
			}
			return nil
		}
		if ctx.Err() != nil {
			return errors.New("no result in 5 minutes")
		}
	}
}

func (w *workerChat) close() {
	w.stopWorker()
	if w.rc != nil {
		w.rc.Close()
	}
	if w.redis != nil && w.redis.Process != nil {
		w.redis.Process.Kill()
		w.redis.Wait()
	}
}
