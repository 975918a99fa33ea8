package bot

import (
	"encoding/json"
	"testing"
)

// threadsOf reads topics out of raw getUpdates results: only a message
// marked is_topic_message in a chat marked is_forum names a topic; a reply
// thread in a group without topics, General, and anything malformed name
// none.
func TestThreadsOf(t *testing.T) {
	raw := `[
	 {"update_id":1,"message":{"message_thread_id":7,"is_topic_message":true,"chat":{"id":-100,"is_forum":true}}},
	 {"update_id":2,"message":{"message_thread_id":9,"chat":{"id":-100,"is_forum":true}}},
	 {"update_id":3,"message":{"message_thread_id":5,"is_topic_message":true,"chat":{"id":-200}}},
	 {"update_id":4,"callback_query":{"message":{"message_thread_id":8,"is_topic_message":true,"chat":{"id":-100,"is_forum":true}}}},
	 {"update_id":5,"edited_message":{"message_thread_id":-3,"is_topic_message":true,"chat":{"id":-100,"is_forum":true}}},
	 {"update_id":6,"callback_query":{}}
	]`
	got := threadsOf(json.RawMessage(raw))
	if len(got) != 2 || got[1] != 7 || got[4] != 8 {
		t.Fatalf("threadsOf = %v, want update 1 → 7 and update 4 → 8 only", got)
	}
	if threadsOf(json.RawMessage(`{"not":"an array"}`)) != nil {
		t.Fatal("a malformed result named topics")
	}
}

func TestParseActorKey(t *testing.T) {
	for _, k := range []actorKey{{chat: 42}, {chat: -1001234567890, topic: 17}} {
		got, err := parseActorKey(k.String())
		if err != nil || got != k {
			t.Errorf("parseActorKey(%q) = %v, %v; want %v", k.String(), got, err, k)
		}
	}
	for _, bad := range []string{"", "x", "-100/", "-100/0", "-100/-2", "-100/x", "1/2/3"} {
		if _, err := parseActorKey(bad); err == nil {
			t.Errorf("parseActorKey(%q) accepted", bad)
		}
	}
}

// FuzzThreadsOf: any bytes give a map of positive topics or nil, never a
// panic; parseActorKey reads back what String writes.
func FuzzThreadsOf(f *testing.F) {
	f.Add([]byte(`[{"update_id":1,"message":{"message_thread_id":7,"is_topic_message":true,"chat":{"is_forum":true}}}]`))
	f.Add([]byte(`[{"update_id":2,"callback_query":{"message":null}}]`))
	f.Add([]byte(`-100/7`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, tp := range threadsOf(data) {
			if tp <= 0 {
				t.Fatalf("topic %d from %q", tp, data)
			}
		}
		if tp := threadOfUpdate(data); tp < 0 {
			t.Fatalf("topic %d from %q", tp, data)
		}
		if k, err := parseActorKey(string(data)); err == nil {
			if back, err := parseActorKey(k.String()); err != nil || back != k {
				t.Fatalf("%q → %v → %q → %v, %v", data, k, k.String(), back, err)
			}
		}
	})
}
