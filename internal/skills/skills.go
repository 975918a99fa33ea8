// Package skills loads Agent Skills: folders holding a SKILL.md (YAML
// front matter with name and description, then instructions) and any
// files beside it. A skill's name and description go into the system
// prompt (within a size budget); the model reads the body, and the files
// beside it, on demand through the skill tool (package skilltool, which
// also wires skills into a run). This package has no dependency on the
// agent, so front ends can list skills and map them to chat commands. Skills come from the
// operator's directories (default $ODEK_HOME/skills) and, only when the
// operator file allows it, from the project's (default .odek/skills).
//
// Every file is opened through an os.Root of its directory: a SKILL.md or
// a skill file reached through a symlink that leaves the allowed
// directory is not loaded or read. The tool reads; nothing here writes.
//
// A Set is immutable after Load and safe for concurrent use.
package skills

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Source says where a skill was found.
type Source string

// Sources.
const (
	SourceOperator Source = "operator"
	SourceProject  Source = "project"
)

// Defaults and bounds.
const (
	// DefaultPromptBudget is the most characters the skill list may add
	// to the system prompt.
	DefaultPromptBudget = 8000
	// MaxSkills bounds the skills of one Set (further ones are skipped
	// with a warning).
	MaxSkills = 256
	// MaxDirs bounds the configured directories of each kind.
	MaxDirs = 16
	// MaxReadBytes bounds one file read through the skill tool.
	MaxReadBytes = 256 << 10
	// MaxListedFiles bounds the file list shown with a skill's body.
	MaxListedFiles = 100
)

// Skill is one loaded skill.
type Skill struct {
	Meta
	Source Source
	// Dir is the skill's directory (absolute).
	Dir string
	// Body is the SKILL.md's instructions (after the front matter).
	Body string
}

// Options say where to look. The zero value loads nothing.
type Options struct {
	// OperatorDirs are trusted directories whose subdirectories are
	// skills.
	OperatorDirs []string
	// ProjectDirs are used only when AllowProject is set (by the
	// operator).
	ProjectDirs  []string
	AllowProject bool
	// PromptBudget bounds Prompt, in characters. 0 ⇒ DefaultPromptBudget.
	PromptBudget int
}

// Section is the operator file's "skills" object.
type Section struct {
	// Enabled false turns skills off ("enabled": false). Default on.
	Enabled *bool `json:"enabled"`
	// Dirs replace the default operator directory $ODEK_HOME/skills
	// (relative ones are resolved against ODEK_HOME).
	Dirs []string `json:"dirs"`
	// AllowProject lets the project's directories add skills.
	AllowProject bool `json:"allow_project"`
	// ProjectDirs replace the default project directory .odek/skills
	// (relative to the project directory; absolute ones are refused).
	ProjectDirs []string `json:"project_dirs"`
	// PromptBudgetChars bounds the skill list in the system prompt.
	PromptBudgetChars int `json:"prompt_budget_chars"`
}

// ErrConfig: the skills section is unusable; the error names the field.
var ErrConfig = errors.New("skills: invalid skills section")

// FromConfig builds Options from the operator file's raw JSON (the whole
// file; nil ⇒ defaults), ODEK_HOME and the project directory. The project
// file is not consulted: only the operator decides where skills come
// from. A pure function.
func FromConfig(operatorFile json.RawMessage, home, projectDir string) (Options, error) {
	var f struct {
		Skills *Section `json:"skills"`
	}
	if len(operatorFile) > 0 {
		if err := json.Unmarshal(operatorFile, &f); err != nil {
			return Options{}, fmt.Errorf("%w: %v", ErrConfig, err)
		}
	}
	sec := Section{}
	if f.Skills != nil {
		sec = *f.Skills
	}
	if sec.Enabled != nil && !*sec.Enabled {
		return Options{}, nil
	}
	if sec.PromptBudgetChars < 0 {
		return Options{}, fmt.Errorf("%w: skills.prompt_budget_chars=%d is negative", ErrConfig, sec.PromptBudgetChars)
	}
	if len(sec.Dirs) > MaxDirs || len(sec.ProjectDirs) > MaxDirs {
		return Options{}, fmt.Errorf("%w: skills.dirs or skills.project_dirs has more than %d entries", ErrConfig, MaxDirs)
	}
	o := Options{AllowProject: sec.AllowProject, PromptBudget: sec.PromptBudgetChars}
	if len(sec.Dirs) == 0 {
		if home != "" {
			o.OperatorDirs = []string{filepath.Join(home, "skills")}
		}
	} else {
		for _, d := range sec.Dirs {
			if d == "" {
				return Options{}, fmt.Errorf("%w: skills.dirs has an empty entry", ErrConfig)
			}
			if !filepath.IsAbs(d) {
				d = filepath.Join(home, d)
			}
			o.OperatorDirs = append(o.OperatorDirs, filepath.Clean(d))
		}
	}
	if o.AllowProject && projectDir != "" {
		pd := sec.ProjectDirs
		if len(pd) == 0 {
			pd = []string{filepath.Join(".odek", "skills")}
		}
		for _, d := range pd {
			if d == "" || filepath.IsAbs(d) || !filepath.IsLocal(d) {
				return Options{}, fmt.Errorf("%w: skills.project_dirs entry %q must be a relative path inside the project", ErrConfig, clip(d, 80))
			}
			o.ProjectDirs = append(o.ProjectDirs, filepath.Join(projectDir, d))
		}
	}
	return o, nil
}

// Set is the loaded skills, by name.
type Set struct {
	skills []Skill
	byName map[string]int
	budget int
}

// Load reads every <dir>/<name>/SKILL.md of the directories, operator
// ones first. A skill whose SKILL.md breaks the format, whose name differs
// from its directory's, whose name an earlier skill took, or that is
// reached through a symlink leaving the directory is skipped with a
// warning; a missing directory is silently empty. Load never fails: a bad
// skill must not stop a run.
func Load(o Options) (*Set, []string) {
	s := &Set{byName: map[string]int{}, budget: o.PromptBudget}
	if s.budget <= 0 {
		s.budget = DefaultPromptBudget
	}
	var warnings []string
	scan := func(dir string, src Source) {
		root, err := os.OpenRoot(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				warnings = append(warnings, fmt.Sprintf("skills: directory %s: %v", dir, err))
			}
			return
		}
		defer root.Close()
		f, err := root.Open(".")
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("skills: directory %s: %v", dir, err))
			return
		}
		entries, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("skills: directory %s: %v", dir, err))
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") || e.Type().IsRegular() {
				continue
			}
			sk, err := loadOne(root, dir, e.Name(), src)
			if errors.Is(err, fs.ErrNotExist) {
				continue // a directory without SKILL.md, or a file
			}
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("skills: %s skipped: %v", filepath.Join(dir, e.Name()), err))
				continue
			}
			if prev, dup := s.byName[sk.Name]; dup {
				warnings = append(warnings, fmt.Sprintf("skills: %s skipped: the %s skill %q in %s has the name", sk.Dir, s.skills[prev].Source, sk.Name, s.skills[prev].Dir))
				continue
			}
			if len(s.skills) >= MaxSkills {
				warnings = append(warnings, fmt.Sprintf("skills: more than %d skills; %s and later ones skipped", MaxSkills, sk.Dir))
				return
			}
			s.byName[sk.Name] = len(s.skills)
			s.skills = append(s.skills, sk)
		}
	}
	for _, d := range o.OperatorDirs {
		scan(d, SourceOperator)
	}
	if o.AllowProject {
		for _, d := range o.ProjectDirs {
			scan(d, SourceProject)
		}
	}
	return s, warnings
}

// loadOne reads <name>/SKILL.md inside root (symlinks may not leave it).
func loadOne(root *os.Root, dir, name string, src Source) (Skill, error) {
	f, err := root.Open(path.Join(name, "SKILL.md"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return Skill{}, fs.ErrNotExist
		}
		// Chiefly a symlink that leaves dir ("path escapes from parent").
		return Skill{}, fmt.Errorf("SKILL.md cannot be opened inside %s: %v", dir, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Skill{}, err
	}
	if !st.Mode().IsRegular() {
		return Skill{}, fmt.Errorf("SKILL.md is not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSkillFileBytes+1))
	if err != nil {
		return Skill{}, err
	}
	m, body, err := Parse(data)
	if err != nil {
		return Skill{}, err
	}
	if m.Name != name {
		return Skill{}, fmt.Errorf("%w: name %q differs from its directory's %q", ErrFormat, m.Name, clip(name, 80))
	}
	return Skill{Meta: m, Source: src, Dir: filepath.Join(dir, name), Body: body}, nil
}

// List returns the skills in load order.
func (s *Set) List() []Skill {
	if s == nil {
		return nil
	}
	return append([]Skill(nil), s.skills...)
}

// Get returns the named skill.
func (s *Set) Get(name string) (Skill, bool) {
	if s == nil {
		return Skill{}, false
	}
	i, ok := s.byName[name]
	if !ok {
		return Skill{}, false
	}
	return s.skills[i], true
}

// Len is the number of skills.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.skills)
}

// Prompt is the system-prompt section listing the skills (name and
// description), at most the budget in characters; skills that do not fit
// are named by count. "" for an empty set.
func (s *Set) Prompt() string {
	if s.Len() == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n## Skills\n\nThese skills hold instructions for particular tasks. When a task matches a skill's description, call the `skill` tool with its name to read the instructions (and then any file beside them) before you start.\n\n")
	left := 0
	for i, sk := range s.skills {
		line := "- " + sk.Name + ": " + oneLine(sk.Description) + "\n"
		if b.Len()+len(line) > s.budget {
			left = len(s.skills) - i
			break
		}
		b.WriteString(line)
	}
	if left > 0 {
		fmt.Fprintf(&b, "- (%d more skills not listed here for space; call the skill tool with name \"?\" for the full list)\n", left)
	}
	return b.String()
}

// OneLine is s with its whitespace runs folded to single spaces.
func OneLine(s string) string { return oneLine(s) }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// ErrNotFound: no skill of that name, or no such file in the skill.
var ErrNotFound = errors.New("skills: not found")

// ReadFile reads file (a relative, slash-separated path) inside the named
// skill's directory: a regular file within MaxReadBytes, opened through
// an os.Root of the directory (no ".." and no symlink out of it).
func (s *Set) ReadFile(name, file string) (string, error) {
	sk, ok := s.Get(name)
	if !ok {
		return "", fmt.Errorf("%w: skill %q", ErrNotFound, clip(name, 80))
	}
	if file == "" || !fs.ValidPath(file) {
		return "", fmt.Errorf("skills: path %q must be relative, slash-separated, without '..'", clip(file, 120))
	}
	root, err := os.OpenRoot(sk.Dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, err := root.OpenFile(file, os.O_RDONLY|openFlags, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%w: %s in skill %q", ErrNotFound, clip(file, 120), name)
		}
		return "", fmt.Errorf("skills: %s in skill %q cannot be opened: %v", clip(file, 120), name, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("skills: %s in skill %q is not a regular file", clip(file, 120), name)
	}
	if st.Size() > MaxReadBytes {
		return "", fmt.Errorf("skills: %s in skill %q is %d bytes, limit %d (MaxReadBytes)", clip(file, 120), name, st.Size(), MaxReadBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxReadBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > MaxReadBytes {
		return "", fmt.Errorf("skills: %s in skill %q is over %d bytes (MaxReadBytes)", clip(file, 120), name, MaxReadBytes)
	}
	return string(b), nil
}

// Files lists the regular files of the skill's directory (relative
// paths, sorted), at most MaxListedFiles, without following symlinks;
// more reports whether some were left out.
func (s *Set) Files(name string) (files []string, more bool) {
	sk, ok := s.Get(name)
	if !ok {
		return nil, false
	}
	root, err := os.OpenRoot(sk.Dir)
	if err != nil {
		return nil, false
	}
	defer root.Close()
	fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != "." {
			return fs.SkipDir
		}
		if d.Type().IsRegular() && p != "SKILL.md" {
			if len(files) >= MaxListedFiles {
				more = true
				return fs.SkipAll
			}
			files = append(files, p)
		}
		return nil
	})
	return files, more
}
