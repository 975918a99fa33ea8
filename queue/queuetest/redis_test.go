package queuetest

import (
	"context"
	"testing"
)

func TestMustFail(t *testing.T) {
	for env, want := range map[string]bool{"": false, "0": false, "1": true, "yes": true} {
		if got := mustFail(env); got != want {
			t.Errorf("mustFail(%q) = %v, want %v", env, got, want)
		}
	}
}

func TestStartServerRestartKeepsAOFData(t *testing.T) {
	srv := StartServer(t, ServerOptions{AOF: true})
	c := srv.Client()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	var got string
	var err error
	for try := 0; try < 5; try++ { // pooled connections to the old process fail once each
		if got, err = c.Get(ctx, "k").Result(); err == nil {
			break
		}
	}
	if got != "v" {
		t.Fatalf("after restart GET k = %q, %v; want v (AOF must keep it)", got, err)
	}
	srv.Kill()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING succeeded after Kill")
	}
}
