package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/odekrun/odek/internal/atomicfile"
	"github.com/odekrun/odek/internal/llm"
)

// starter is the operator file `odek init` writes. JSON has no comments, so
// explanations live in keys starting with "//", which Load ignores like any
// unknown key. Every value equals the built-in default, so the file changes
// nothing until edited.
const starter = `{
  "//": "odek operator configuration ($ODEK_HOME/config.json, default ~/.odek/config.json). JSON has no comments: keys starting with // are notes and are ignored. Reference: docs/CONFIG.md",

  "// api_key": "API key for the endpoint. Prefer the ODEK_API_KEY (or OPENAI_API_KEY) environment variable; if you put it here, keep this file mode 600. Operator-only: ignored in a project's odek.json.",
  "api_key": "",

  "// base_url": "OpenAI-compatible API root. Empty: https://api.openai.com/v1 when a key is set, else a local server at http://127.0.0.1:11434/v1 (Ollama) if one answers. Env ODEK_BASE_URL overrides. Operator-only.",
  "base_url": "",

  "// provider": "Provider preset: PROVIDERS. It fills base_url and model when they are empty, reads the key from the provider's own variable (e.g. DEEPSEEK_API_KEY) and turns on the client's handling of that provider's quirks. Table: docs/PROVIDERS.md. Env ODEK_PROVIDER overrides. Operator-only.",
  "provider": "",

  "// model": "Model id. Empty: gpt-4o-mini, or llama3.2 for a local (loopback) server. Env ODEK_MODEL overrides.",
  "model": "",

  "// max_iterations": "Most agent loop iterations per run; 0 means 90.",
  "max_iterations": 90,

  "// max_tool_parallel": "Most tool calls run at the same time; 0 means 4.",
  "max_tool_parallel": 4,

  "// system_prompt": "Replaces the built-in system prompt; empty keeps the built-in one.",
  "system_prompt": "",

  "// dangerous": "Danger policy, operator-only. classes maps a danger class (safe, local_write, system_write, destructive, code_execution, network_egress, install, unknown) to allow, prompt or deny; classes not listed keep odek's built-in action. non_interactive (deny or allow) decides prompt actions when nobody can answer.",
  "dangerous": {
    "classes": {},
    "non_interactive": "deny"
  },

  "// llm": "Chat-completions client. stream: use server-sent events. max_attempts: HTTP attempts per call, retries included. idle_timeout_seconds: abort a silent stream. request_timeout_seconds: bound one attempt. 0 means the client's default; seconds are capped at 86400. strict_tool_models: models whose tools are sent in OpenAI's strict mode. response_format_models: models whose endpoint takes response_format json_schema, sent natively for --output-schema runs. keep_think_tags: leave a leading <think> block in the answer instead of treating it as reasoning.",
  "llm": {
    "stream": true,
    "max_attempts": 0,
    "idle_timeout_seconds": 0,
    "request_timeout_seconds": 0,
    "strict_tool_models": [],
    "response_format_models": [],
    "keep_think_tags": false
  },

  "// tools": "Built-in tools. shell_timeout_seconds: bound one shell command (0: the tool's default). max_output_bytes: tool output shown to the model is clipped to this many bytes (0: 65536).",
  "tools": {
    "shell_timeout_seconds": 0,
    "max_output_bytes": 65536
  }
}
`

// StarterJSON returns the commented starter operator file. It is valid JSON,
// loads cleanly with Load and sets every setting to its default.
func StarterJSON() []byte {
	var names []string
	for _, p := range llm.Presets() {
		names = append(names, p.Name)
	}
	return []byte(strings.Replace(starter, "PROVIDERS", strings.Join(names, ", "), 1))
}

// WriteStarter writes StarterJSON to path with mode 0600, creating missing
// parent directories with mode 0700. It refuses to replace an existing file
// (or symlink) with an error wrapping ErrExists unless force is set; with
// force the file is replaced atomically (a symlink at path is replaced, its
// target left alone).
func WriteStarter(path string, force bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("config: create %s: %w", dir, err)
	}
	if !force {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s (pass force to overwrite)", ErrExists, path)
		}
		if err != nil {
			return fmt.Errorf("config: write starter: %w", err)
		}
		if err := writeClose(f, path); err != nil {
			os.Remove(path) // leave no half-written file that would block a retry
			return err
		}
		return nil
	}
	if err := atomicfile.WriteFile(path, StarterJSON(), 0o600); err != nil {
		return fmt.Errorf("config: write starter: %w", err)
	}
	return nil
}

// writeClose writes the starter to f, forces mode 0600 whatever the umask
// or a pre-existing temp file said, syncs and closes.
func writeClose(f *os.File, name string) error {
	_, werr := f.Write(StarterJSON())
	if werr == nil {
		werr = f.Chmod(0o600)
	}
	if werr == nil {
		werr = f.Sync()
	}
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("config: write %s: %w", name, werr)
	}
	return nil
}
