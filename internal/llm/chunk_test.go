package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// flat is a comparable rendering of what decodeChunk extracts, built both
// from a chunkView and, independently, from encoding/json's map decoding.
type flat struct {
	Model     *string
	HasChoice bool
	Content   *string
	Refusal   *string
	Finish    *string
	Tools     []flatTool
	Legacy    *flatTool
	Usage     *flatUsage
	Err       *flatErr
}

type flatTool struct {
	Index                *int
	ID, Type, Name, Args *string
}

type flatUsage struct {
	Prompt, Completion, Cached, CacheHit *int
	Read, New, Write, TopCached          *int
}

type flatErr struct {
	Message, Type, Code *string
	CodeNumeric         bool
}

func ptrStr(j jstr) *string {
	if !j.ok {
		return nil
	}
	s := string(appendStr(nil, j))
	return &s
}

func ptrInt(v int, ok bool) *int {
	if !ok {
		return nil
	}
	return &v
}

func flatten(v *chunkView) flat {
	f := flat{Model: ptrStr(v.model), HasChoice: v.hasChoice}
	if v.hasChoice {
		c := &v.choice
		f.Content, f.Refusal, f.Finish = ptrStr(c.content), ptrStr(c.refusal), ptrStr(c.finish)
		for _, t := range c.tools {
			f.Tools = append(f.Tools, flatTool{Index: ptrInt(t.index, t.hasIndex), ID: ptrStr(t.id),
				Type: ptrStr(t.typ), Name: ptrStr(t.name), Args: ptrStr(t.args)})
		}
		if c.hasLegacy {
			f.Legacy = &flatTool{Name: ptrStr(c.legacy.name), Args: ptrStr(c.legacy.args)}
		}
	}
	if u := v.usage; u.ok {
		f.Usage = &flatUsage{ptrInt(u.prompt, u.hasPrompt), ptrInt(u.completion, u.hasCompl),
			ptrInt(u.cached, u.hasCached), ptrInt(u.cacheHit, u.hasCacheH),
			ptrInt(u.cacheRead, u.hasRead), ptrInt(u.cacheNew, u.hasNew), ptrInt(u.detailsWrite, u.hasDetailsWrite), ptrInt(u.topCached, u.hasTopCached)}
	}
	if e := v.err; e.ok {
		f.Err = &flatErr{ptrStr(e.message), ptrStr(e.typ), ptrStr(e.code), e.codeIsNumeric}
	}
	return f
}

// reference decodes data with encoding/json (into maps, numbers kept as
// literals) and extracts the same fields by the documented rules. ok is
// false when decodeChunk must fail.
func reference(data []byte) (f flat, ok bool) {
	if !json.Valid(data) {
		return f, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return f, false
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		return f, false
	}
	str := func(v any) *string {
		if s, ok := v.(string); ok {
			return &s
		}
		return nil
	}
	num := func(v any) *int {
		n, ok := v.(json.Number)
		if !ok {
			return nil
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return nil
		}
		x := int(i)
		return &x
	}
	f.Model = str(m["model"])
	var choiceUsage map[string]any
	if arr, ok := m["choices"].([]any); ok {
		for pos, el := range arr {
			cm, ok := el.(map[string]any)
			if !ok {
				continue
			}
			idx := num(cm["index"])
			if !(idx != nil && *idx == 0 || idx == nil && pos == 0) {
				continue
			}
			f.HasChoice = true
			f.Finish = str(cm["finish_reason"])
			choiceUsage, _ = cm["usage"].(map[string]any)
			f.Content, f.Refusal, f.Tools, f.Legacy = nil, nil, nil, nil
			if d, ok := cm["delta"].(map[string]any); ok {
				f.Content, f.Refusal = str(d["content"]), str(d["refusal"])
				if fc, ok := d["function_call"].(map[string]any); ok {
					f.Legacy = &flatTool{Name: str(fc["name"]), Args: str(fc["arguments"])}
				}
				if tcs, ok := d["tool_calls"].([]any); ok {
					for _, tc := range tcs {
						tm, ok := tc.(map[string]any)
						if !ok {
							continue
						}
						ft := flatTool{Index: num(tm["index"]), ID: str(tm["id"]), Type: str(tm["type"])}
						if fn, ok := tm["function"].(map[string]any); ok {
							ft.Name, ft.Args = str(fn["name"]), str(fn["arguments"])
						}
						f.Tools = append(f.Tools, ft)
					}
				}
			}
		}
	}
	usage, _ := m["usage"].(map[string]any)
	if usage == nil {
		if g, ok := m["x_groq"].(map[string]any); ok {
			usage, _ = g["usage"].(map[string]any)
		}
	}
	if usage == nil {
		usage = choiceUsage
	}
	if u := usage; u != nil {
		f.Usage = &flatUsage{Prompt: num(u["prompt_tokens"]), Completion: num(u["completion_tokens"]),
			CacheHit: num(u["prompt_cache_hit_tokens"]), Read: num(u["cache_read_input_tokens"]),
			New: num(u["cache_creation_input_tokens"]), TopCached: num(u["cached_tokens"])}
		if d, ok := u["prompt_tokens_details"].(map[string]any); ok {
			f.Usage.Cached, f.Usage.Write = num(d["cached_tokens"]), num(d["cache_write_tokens"])
		}
	}
	switch e := m["error"].(type) {
	case string:
		f.Err = &flatErr{Message: &e}
	case map[string]any:
		f.Err = &flatErr{Message: str(e["message"]), Type: str(e["type"])}
		switch c := e["code"].(type) {
		case string:
			f.Err.Code = &c
		case json.Number:
			s := string(c)
			f.Err.Code, f.Err.CodeNumeric = &s, true
		}
	}
	return f, true
}

var chunkSeeds = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"Hel\u006co \"w\" \\ \/ \b\f\n\r\t é ✓ \ud83d\ude00"},"finish_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"city\": \"Par"}}]}}]}`,
	`{"choices":[{"index":0,"delta":{"reasoning_content":"think","content":null}}]}`,
	`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	`{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":8}}}`,
	`{"usage":{"prompt_tokens":5,"completion_tokens":1,"prompt_cache_hit_tokens":4,"prompt_cache_miss_tokens":1}}`,
	`{"usage":{"prompt_tokens":50,"completion_tokens":1,"cache_read_input_tokens":4000,"cache_creation_input_tokens":20}}`,
	`{"usage":{"prompt_tokens":900,"completion_tokens":2,"cached_tokens":512},"choices":[]}`,
	`{"usage":{"prompt_tokens":900,"prompt_tokens_details":{"cached_tokens":512,"cache_write_tokens":100,"audio_tokens":0}}}`,
	`{"error":{"message":"overloaded","type":"server_error","code":null}}`,
	`{"error":{"message":"upstream","code":502}}`,
	`{"error":"plain"}`,
	`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls","usage":{"prompt_tokens":7,"completion_tokens":2}}]}`,
	`{"choices":[{"index":0,"usage":{"prompt_tokens":7}}],"x_groq":{"id":"r","usage":{"prompt_tokens":9,"completion_tokens":1}}}`,
	`{"x_groq":{"usage":{"prompt_tokens":9}},"usage":{"prompt_tokens":3},"x_groq":null}`,
	`{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"a"}],"reasoning":"r","reasoning_details":[{"index":0}],"function_call":{"name":"f","arguments":"{}"}}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"","function":{"name":"a","arguments":"{}"},"extra_content":{"google":{"thought_signature":"s"}}},{"id":"","function":{"name":"b","arguments":"{}"}}]}}]}`,
	`{"choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]}`,
	`{"choices":[{"delta":{"content":"no index"}},{"delta":{"content":"second"}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"a"},"delta":{"content":"b"}}],"choices":null}`,
	`{"model":"m","model":"\u006d2","choices":[{"index":"0","delta":{"content":1}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"n","arguments":"{}"}},7,null]}}]}`,
	`{"usage":null,"error":null,"choices":[{"index":0.0,"delta":{"content":"x"}}]}`,
	`{"choices":[{"index":-0,"delta":{"content":"\ud800 lone \udc00 \ud800\u0041"}}]}`,
	"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"bad utf8 \xff\xfe \xed\xa0\x80\"}}]}",
	`{"choices":[{"index":9223372036854775807,"delta":{"tool_calls":[{"index":-9223372036854775808}]}}]}`,
	`{"choices":[{"index":9223372036854775808}]}`,
	` { "choices" : [ { "index" : 0 , "delta" : { "content" : "ws" } } ] } `,
	`{"a":[1,2.5e-3,-0.0,true,false,null,{"b":[]},{}],"choices":[]}`,
	`{"choices":[{"index":0,"delta":{"content":"x"}}]} trailing`,
	`{"choices":[{"index":0,"delta":{"content":"x"}},]}`,
	`{"choices":[{"index":01}]}`,
	`{"content":"\x"}`,
	`{"a":"ctl` + "\x01" + `"}`,
	`{"a":tru}`,
	`[1]`,
	`"str"`,
	``,
	`{`,
	`{"a":1,}`,
	`{"a" 1}`,
	`{"\u0063hoices":[{"index":0,"delta":{"\u0063ontent":"escaped keys"}}]}`,
	`{"choices":[{"index":0,"delta":{"refusal":"I can't help with that."}}]}`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	`{"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
	`{"x":` + strings.Repeat("[", 9990) + strings.Repeat("]", 9990) + `}`,
}

func TestDecodeChunkMatchesEncodingJSON(t *testing.T) {
	var s scanner
	var v chunkView
	for _, seed := range chunkSeeds {
		checkChunk(t, &s, &v, []byte(seed))
	}
}

func checkChunk(t *testing.T, s *scanner, v *chunkView, data []byte) {
	t.Helper()
	want, wantOK := reference(data)
	err := s.decodeChunk(data, v)
	if (err == nil) != wantOK {
		t.Fatalf("decodeChunk(%.200q) error = %v, want ok=%v", data, err, wantOK)
	}
	if err != nil {
		if !errors.Is(err, ErrMalformedResponse) {
			t.Fatalf("error %v is not ErrMalformedResponse", err)
		}
		return
	}
	if got := flatten(v); !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeChunk(%.200q):\n got %s\nwant %s", data, dump(got), dump(want))
	}
}

func dump(f flat) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// FuzzDecodeChunk checks the hand-written decoder against encoding/json:
// same validity verdict, same extracted values, no panic.
func FuzzDecodeChunk(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add([]byte(s))
	}
	var s scanner
	var v chunkView
	f.Fuzz(func(t *testing.T, data []byte) {
		checkChunk(t, &s, &v, data)
	})
}

func TestAppendUnescapedMatchesEncodingJSON(t *testing.T) {
	for _, lit := range []string{
		`""`, `"plain"`, `"\u00e9\u2028\ud83d\ude00"`, `"\ud83d"`, `"\ude00\ud83d"`, `"\ud83d\u0041"`,
		`"\ud83d\ud83d\ude00"`, "\"\xff\"", "\"\xc3\"", "\"\xe2\x9c\"", "\"\xf4\x90\x80\x80\"", `"\"\\\/\b\f\n\r\t"`,
		"\"\xef\xbf\xbd\"", `"\u0000"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(lit), &want); err != nil {
			t.Fatalf("%q: %v", lit, err)
		}
		got := string(appendUnescaped(nil, []byte(lit[1:len(lit)-1])))
		if got != want {
			t.Errorf("appendUnescaped(%q) = %q, want %q", lit, got, want)
		}
	}
}

func TestParseInt(t *testing.T) {
	for _, tc := range []struct {
		lit  string
		want int
		ok   bool
	}{
		{"0", 0, true}, {"-0", 0, true}, {"42", 42, true}, {"-17", -17, true},
		{"9223372036854775807", 9223372036854775807, true}, {"-9223372036854775808", -9223372036854775808, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false}, {"99999999999999999999", 0, false},
		{"1.0", 0, false}, {"1e2", 0, false}, {"", 0, false}, {"-", 0, false},
	} {
		got, ok := parseInt([]byte(tc.lit))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseInt(%q) = %d, %v, want %d, %v", tc.lit, got, ok, tc.want, tc.ok)
		}
	}
}

func TestDecodeChunkDoesNotAllocate(t *testing.T) {
	data := []byte(chunkSeeds[3])
	var s scanner
	var v chunkView
	if err := s.decodeChunk(data, &v); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = s.decodeChunk(data, &v) }); n != 0 {
		t.Errorf("decodeChunk allocates %v times per chunk", n)
	}
}

// TestUsageShapes is the cached-token rule over every usage shape (see
// usageView.usage); the recorded bodies are in testdata/providers.
func TestUsageShapes(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Usage
	}{
		{"openai", `{"prompt_tokens":2006,"completion_tokens":300,"prompt_tokens_details":{"cached_tokens":1920}}`, Usage{PromptTokens: 2006, CompletionTokens: 300, CachedTokens: 1920}},
		{"deepseek", `{"prompt_tokens":1200,"completion_tokens":3,"prompt_cache_hit_tokens":1152,"prompt_cache_miss_tokens":48}`, Usage{PromptTokens: 1200, CompletionTokens: 3, CachedTokens: 1152}},
		{"anthropic via litellm, prompt includes cache", `{"prompt_tokens":3100,"completion_tokens":12,"cache_creation_input_tokens":1024,"cache_read_input_tokens":2048}`, Usage{PromptTokens: 3100, CompletionTokens: 12, CachedTokens: 2048, CacheWriteTokens: 1024}},
		{"anthropic rule, prompt excludes cache", `{"prompt_tokens":50,"completion_tokens":1,"cache_creation_input_tokens":20,"cache_read_input_tokens":4000}`, Usage{PromptTokens: 4070, CompletionTokens: 1, CachedTokens: 4000, CacheWriteTokens: 20}},
		{"openrouter", `{"prompt_tokens":5400,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":4096,"cache_write_tokens":1200}}`, Usage{PromptTokens: 5400, CompletionTokens: 4, CachedTokens: 4096, CacheWriteTokens: 1200}},
		{"moonshot", `{"prompt_tokens":8000,"completion_tokens":2,"cached_tokens":7680}`, Usage{PromptTokens: 8000, CompletionTokens: 2, CachedTokens: 7680}},
		{"details win over deepseek", `{"prompt_tokens":10,"prompt_tokens_details":{"cached_tokens":4},"prompt_cache_hit_tokens":6}`, Usage{PromptTokens: 10, CachedTokens: 4}},
		{"cached above prompt is clamped", `{"prompt_tokens":10,"prompt_tokens_details":{"cached_tokens":40}}`, Usage{PromptTokens: 10, CachedTokens: 10}},
		{"negative counts are zero", `{"prompt_tokens":-5,"completion_tokens":-1,"cached_tokens":-3}`, Usage{}},
		{"none", `{"prompt_tokens":7,"completion_tokens":2}`, Usage{PromptTokens: 7, CompletionTokens: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Streamed: the chunk decoder.
			var v chunkView
			var s scanner
			if err := s.decodeChunk([]byte(`{"usage":`+tt.body+`}`), &v); err != nil {
				t.Fatal(err)
			}
			if got := v.usage.usage(); got != tt.want {
				t.Errorf("stream: %+v, want %+v", got, tt.want)
			}
			// Not streamed: the body decoder.
			res, _, err := decodeBody([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}],"usage":`+tt.body+`}`), false)
			if err != nil {
				t.Fatal(err)
			}
			if res.Usage != tt.want {
				t.Errorf("body: %+v, want %+v", res.Usage, tt.want)
			}
		})
	}
}
