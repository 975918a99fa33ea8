package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/skills"
)

// loadSkills loads the skills the operator file allows (internal/skills).
func loadSkills(c *config.Config) (*skills.Set, []string, error) {
	o, err := skills.FromConfig(c.Layers.Operator.Raw, c.Home, c.ProjectDir)
	if err != nil {
		return nil, nil, err
	}
	set, warns := skills.Load(o)
	return set, warns, nil
}

// cmdSkills is `odek skills list|show NAME`.
func cmdSkills(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "show") {
		return usageErr("usage: odek skills list [--json] | odek skills show <name>")
	}
	c, warnings, err := config.Load(config.Options{})
	if err != nil {
		return withCode(exitSetup, err)
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "odek: warning:", w.String())
	}
	set, warns, err := loadSkills(c)
	if err != nil {
		return withCode(exitSetup, err)
	}
	for _, w := range warns {
		fmt.Fprintln(stderr, "odek: warning:", w)
	}
	switch args[0] {
	case "list":
		if len(args) > 1 && args[1] == "--json" {
			type row struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				Source      string `json:"source"`
				Dir         string `json:"dir"`
			}
			rows := []row{}
			for _, sk := range set.List() {
				rows = append(rows, row{sk.Name, sk.Description, string(sk.Source), sk.Dir})
			}
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(rows)
		}
		if set.Len() == 0 {
			fmt.Fprintln(stdout, "no skills (put them in $ODEK_HOME/skills/<name>/SKILL.md; docs/SKILLS.md)")
			return nil
		}
		for _, sk := range set.List() {
			fmt.Fprintf(stdout, "%s\t%s\t%s\n", sk.Name, sk.Source, firstLine(sk.Description))
		}
		return nil
	default:
		if len(args) != 2 {
			return usageErr("usage: odek skills show <name>")
		}
		sk, ok := set.Get(args[1])
		if !ok {
			return usageErr("odek skills show: no skill %q (odek skills list)", args[1])
		}
		fmt.Fprintf(stdout, "name: %s\nsource: %s\ndirectory: %s\ndescription: %s\n", sk.Name, sk.Source, sk.Dir, sk.Description)
		if sk.License != "" {
			fmt.Fprintf(stdout, "license: %s\n", sk.License)
		}
		if sk.AllowedTools != "" {
			fmt.Fprintf(stdout, "allowed-tools (not enforced): %s\n", sk.AllowedTools)
		}
		files, _ := set.Files(sk.Name)
		for _, f := range files {
			fmt.Fprintf(stdout, "file: %s\n", f)
		}
		fmt.Fprintf(stdout, "\n%s", sk.Body)
		return nil
	}
}

func firstLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i] + " …"
		}
	}
	return s
}
