package ext

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/odekrun/odek/internal/atomicfile"
	"github.com/odekrun/odek/mcpclient"
)

// ApprovalsFileName is the approvals file inside ODEK_HOME.
const ApprovalsFileName = "approvals.json"

// Limits of the approvals file.
const (
	// MaxApprovalsBytes bounds the approvals file; a larger one is ignored.
	MaxApprovalsBytes = 4 << 20
	// MaxApprovals bounds the entries of each kind.
	MaxApprovals = 20000
	// approvalsVersion is the only version this package reads and writes.
	approvalsVersion = 1
)

// Approval is one remembered grant. Only the key (a SHA-256 digest of what
// was approved) decides; the other fields are for people reading the file.
type Approval struct {
	Server string `json:"server"`
	// Tool is empty for a spawn approval.
	Tool string `json:"tool,omitempty"`
	// Project is the project file of a project server.
	Project    string    `json:"project,omitempty"`
	ApprovedAt time.Time `json:"approved_at"`
}

// Approvals is the content of approvals.json: spawn approvals of project
// servers and tool approvals, each keyed by a lowercase hex SHA-256 (see
// SpawnKey and ToolKey). The zero value is empty and usable.
type Approvals struct {
	Version int                 `json:"version"`
	Servers map[string]Approval `json:"servers"`
	Tools   map[string]Approval `json:"tools"`
}

// ParseApprovals decodes an approvals file. It fails closed (ErrApprovals)
// on anything but a JSON object of version 1 with at most MaxApprovals
// entries per kind, keyed by 64 lowercase hex digits; unknown fields are
// ignored. It is a pure function.
func ParseApprovals(data []byte) (*Approvals, error) {
	if len(data) > MaxApprovalsBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrApprovals, len(data), MaxApprovalsBytes)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrApprovals)
	}
	var a Approvals
	if err := json.Unmarshal(trimmed, &a); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrApprovals, jsonProblem(err))
	}
	if a.Version != approvalsVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrApprovals, a.Version, approvalsVersion)
	}
	for kind, m := range map[string]map[string]Approval{"servers": a.Servers, "tools": a.Tools} {
		if len(m) > MaxApprovals {
			return nil, fmt.Errorf("%w: %d %s entries, limit %d", ErrApprovals, len(m), kind, MaxApprovals)
		}
		for k := range m {
			if !isKey(k) {
				return nil, fmt.Errorf("%w: %s key %q is not 64 lowercase hex digits", ErrApprovals, kind, clipName(k))
			}
		}
	}
	if a.Servers == nil {
		a.Servers = map[string]Approval{}
	}
	if a.Tools == nil {
		a.Tools = map[string]Approval{}
	}
	return &a, nil
}

func isKey(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Marshal encodes a for the file (indented, trailing newline).
func (a *Approvals) Marshal() []byte {
	out := Approvals{Version: approvalsVersion, Servers: a.Servers, Tools: a.Tools}
	if out.Servers == nil {
		out.Servers = map[string]Approval{}
	}
	if out.Tools == nil {
		out.Tools = map[string]Approval{}
	}
	b, _ := json.MarshalIndent(out, "", "  ") // maps of plain structs always marshal
	return append(b, '\n')
}

// ReadApprovals reads dir/approvals.json. A missing file is an empty
// Approvals. The file must be a regular file (a symlink is refused), not
// writable by group or others, and parse with ParseApprovals; otherwise the
// error wraps ErrApprovals and the caller ignores the file.
func ReadApprovals(dir string) (*Approvals, error) {
	p := filepath.Join(dir, ApprovalsFileName)
	f, err := openNoFollow(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &Approvals{Version: approvalsVersion, Servers: map[string]Approval{}, Tools: map[string]Approval{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrApprovals, p, unwrapPath(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrApprovals, p, unwrapPath(err))
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrApprovals, p)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("%w: %s is writable by group or others (mode %v); fix with chmod 600", ErrApprovals, p, st.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxApprovalsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrApprovals, p, unwrapPath(err))
	}
	a, err := ParseApprovals(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return a, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// WriteApprovals replaces dir/approvals.json atomically: a temporary file
// in dir created 0600, written, synced, renamed over the old one, and the
// directory synced. dir is created 0700 when missing.
func WriteApprovals(dir string, a *Approvals) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("ext: approvals: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, ApprovalsFileName), a.Marshal(), 0o600); err != nil {
		return fmt.Errorf("ext: approvals: %w", err)
	}
	return nil
}

// digest is the SHA-256 of v's JSON form, as 64 hex digits.
func digest(v any) string {
	b, _ := json.Marshal(v) // only plain structs of strings, ints and slices
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// SpawnKey identifies everything a spawn approval of s covers: the
// declaring file, the name, command, args, the configured environment that
// reaches the server (names and values), every limit, the artifact roots
// and required. Any change gives another key, so odek asks again.
func SpawnKey(s *ServerSpec) string {
	return digest(struct {
		Kind             string   `json:"kind"`
		Project          string   `json:"project"`
		Name             string   `json:"name"`
		Command          string   `json:"command"`
		Args             []string `json:"args"`
		Env              []string `json:"env"`
		TimeoutMS        int64    `json:"timeout_ms"`
		MaxResponseBytes int64    `json:"max_response_bytes"`
		MaxResultChars   int      `json:"max_result_chars"`
		StartupMS        int64    `json:"startup_timeout_ms"`
		ArtifactRoots    []string `json:"artifact_roots"`
		Required         bool     `json:"required"`
		// Added with the HTTP transport; empty for a command server, so
		// its digest (and approvals given before) do not change.
		URL               string            `json:"url,omitempty"`
		Headers           map[string]string `json:"headers,omitempty"`
		AllowInsecureHTTP bool              `json:"allow_insecure_http,omitempty"`
		ProtocolVersion   string            `json:"protocol_version,omitempty"`
	}{"odek-spawn/v1", s.File, s.Name, s.Command, s.Args, s.passedEnv(), s.Timeout.Milliseconds(),
		s.MaxResponseBytes, s.MaxResultChars, s.StartupTimeout.Milliseconds(), s.ArtifactRoots, s.Required,
		s.URL, s.Headers, s.AllowInsecureHTTP, s.ProtocolVersion})
}

// ToolKey identifies a tool approval: the scope (the project file for a
// project server, "operator" otherwise), the server, the tool's name,
// description, and the SHA-256 of its input schema and annotations. A
// server that changes a tool's description or schema is asked about again.
func ToolKey(s *ServerSpec, t mcpclient.Tool) string {
	scope := string(SourceOperator)
	if s.Source == SourceProject {
		scope = "project:" + s.File
	}
	return digest(struct {
		Kind        string `json:"kind"`
		Scope       string `json:"scope"`
		Server      string `json:"server"`
		Tool        string `json:"tool"`
		Description string `json:"description"`
		Schema      string `json:"input_schema_sha256"`
		Annotations string `json:"annotations_sha256"`
	}{"odek-tool/v1", scope, s.Name, t.Name, t.Description, sha(t.InputSchema), sha(t.Annotations)})
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Grant names what allowed a server or a tool.
type Grant string

// Grants, strongest first.
const (
	// GrantOperator: operator servers need no spawn approval.
	GrantOperator Grant = "operator_config"
	// GrantAutoApprove: auto_approve: true in the operator file.
	GrantAutoApprove Grant = "auto_approve"
	// GrantPersisted: a matching entry in approvals.json.
	GrantPersisted Grant = "approvals_file"
	// GrantEnv: ODEK_APPROVE_MCP=1 (Options.ApproveAll), this invocation.
	GrantEnv Grant = "ODEK_APPROVE_MCP"
	// GrantPrompt: the operator answered yes at the prompt.
	GrantPrompt Grant = "prompt"
)

// Decision is what to do about one approval.
type Decision struct {
	// Allow: granted without asking, by Grant.
	Allow bool
	Grant Grant
	// Ask: ask the prompter; a yes is persisted.
	Ask bool
}

// ApprovalHint is how to approve when nobody can be asked.
const ApprovalHint = "run odek in a terminal to be asked, or approve ahead with `odek ext approve` (answers are remembered in $ODEK_HOME/approvals.json), or set ODEK_APPROVE_MCP=1 to approve for one invocation"

// DecideSpawn decides whether a server may be spawned. Operator servers
// may; a project server needs a persisted approval, ODEK_APPROVE_MCP=1
// (approveAll) or a yes at the prompt (canPrompt). Neither Allow nor Ask ⇒
// the server is not loaded. Pure.
func DecideSpawn(src Source, persisted, approveAll, canPrompt bool) Decision {
	switch {
	case src != SourceProject:
		return Decision{Allow: true, Grant: GrantOperator}
	case persisted:
		return Decision{Allow: true, Grant: GrantPersisted}
	case approveAll:
		return Decision{Allow: true, Grant: GrantEnv}
	case canPrompt:
		return Decision{Ask: true}
	}
	return Decision{}
}

// DecideTool decides whether a listed tool may be offered to the model:
// auto_approve (operator servers only; ParseConfig strips it from project
// entries), a persisted approval, ODEK_APPROVE_MCP=1, or a yes at the
// prompt. Neither Allow nor Ask ⇒ the tool is not loaded. Pure.
func DecideTool(autoApprove, persisted, approveAll, canPrompt bool) Decision {
	switch {
	case autoApprove:
		return Decision{Allow: true, Grant: GrantAutoApprove}
	case persisted:
		return Decision{Allow: true, Grant: GrantPersisted}
	case approveAll:
		return Decision{Allow: true, Grant: GrantEnv}
	case canPrompt:
		return Decision{Ask: true}
	}
	return Decision{}
}

// SpawnQuestion is the prompt for a project server: command, args, the
// names of the environment variables it gets from the file (never values),
// and its limits.
func SpawnQuestion(s *ServerSpec) string {
	var b strings.Builder
	if s.URL != "" {
		fmt.Fprintf(&b, "odek: %s declares remote MCP server %q. Connect to it?\n", displayPath(s.File), s.Name)
		fmt.Fprintf(&b, "  url:     %s\n", displayURL(s.URL))
		if len(s.Headers) > 0 {
			keys := make([]string, 0, len(s.Headers))
			for k := range s.Headers {
				keys = append(keys, clipName(k))
			}
			sort.Strings(keys)
			fmt.Fprintf(&b, "  headers: %s (values not shown)\n", strings.Join(keys, ", "))
		}
	} else {
		fmt.Fprintf(&b, "odek: %s declares MCP server %q. Start it?\n", displayPath(s.File), s.Name)
		fmt.Fprintf(&b, "  command: %s\n", quoteArg(s.Command))
	}
	if len(s.Args) > 0 {
		q := make([]string, len(s.Args))
		for i, a := range s.Args {
			q[i] = quoteArg(a)
		}
		fmt.Fprintf(&b, "  args:    %s\n", strings.Join(q, " "))
	}
	var keys []string
	for _, kv := range s.passedEnv() {
		k, _, _ := strings.Cut(kv, "=")
		keys = append(keys, clipName(k))
	}
	if len(keys) > 0 {
		fmt.Fprintf(&b, "  env:     %s (values not shown)\n", strings.Join(keys, ", "))
	}
	fmt.Fprintf(&b, "  limits:  timeout %s, startup %s, max_response_bytes %d, max_result_chars %d\n", s.Timeout, s.StartupTimeout, s.MaxResponseBytes, s.MaxResultChars)
	if len(s.ArtifactRoots) > 0 {
		fmt.Fprintf(&b, "  artifact_roots: %s\n", strings.Join(s.ArtifactRoots, ", "))
	}
	b.WriteString("Start this server? [y/N] ")
	return b.String()
}

// ToolsQuestion is the prompt for the unapproved tools of one server:
// each tool's name and (clipped, one-line) description.
func ToolsQuestion(s *ServerSpec, ts []mcpclient.Tool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "odek: MCP server %q (%s) offers %d tool(s) not approved yet:\n", s.Name, s.Source, len(ts))
	sorted := append([]mcpclient.Tool(nil), ts...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, t := range sorted {
		fmt.Fprintf(&b, "  %s: %s\n", t.Name, oneLine(t.Description, MaxDescriptionChars))
		if args := schemaArgs(t.InputSchema); len(args) > 0 {
			fmt.Fprintf(&b, "    arguments: %s\n", oneLine(strings.Join(args, ", "), 400))
		}
	}
	b.WriteString("Let the model use these tools? [y/N] ")
	return b.String()
}

// schemaArgs lists the property names of an input schema, sorted.
func schemaArgs(schema []byte) []string {
	var sc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &sc) != nil {
		return nil
	}
	names := make([]string, 0, len(sc.Properties))
	for k := range sc.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// oneLine makes server text safe for one terminal line: control
// characters (escape sequences included) become spaces, at most n runes.
func oneLine(s string, n int) string {
	var b strings.Builder
	i := 0
	for _, r := range s {
		if i == n {
			b.WriteString("…")
			break
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			r = ' '
		}
		b.WriteRune(r)
		i++
	}
	return b.String()
}

// quoteArg shows an argument unambiguously: bare when it is plain,
// Go-quoted otherwise.
func quoteArg(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@,+%", r)) {
			return fmt.Sprintf("%q", s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}
