package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/ext"
	"github.com/odekrun/odek/mcpclient"
	"github.com/odekrun/odek/mcpclient/mcpauth"
)

const mcpUsage = `Usage:
  odek mcp login [--manual] [--timeout 5m] <server>
        log in to a remote MCP server of the operator config with OAuth 2.1
        (discovery, client registration, PKCE); tokens go to
        $ODEK_HOME/mcp-auth/<server>.json (0600). --manual: for a host without
        a browser: print the URL, then paste the address the browser was
        redirected to.
  odek mcp logout <server>   revoke (when the server can) and delete the tokens
  odek mcp status            list the stored logins and their expiry
`

// cmdMCP is `odek mcp`: OAuth logins of remote MCP servers.
func cmdMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, mcpUsage)
		if len(args) == 0 {
			return usageErr("odek mcp: a subcommand is required (login, logout, status)")
		}
		return nil
	}
	c, warnings, err := config.Load(config.Options{})
	if err != nil {
		return withCode(exitSetup, err)
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "odek: warning:", w.String())
	}
	store := mcpauth.NewStore(c.Home)
	switch args[0] {
	case "login":
		fs := flag.NewFlagSet("odek mcp login", flag.ContinueOnError)
		fs.SetOutput(stderr)
		manual := fs.Bool("manual", false, "print the URL and read the redirected address from stdin (headless hosts)")
		timeout := fs.Duration("timeout", 5*time.Minute, "how long the login may take, the browser step included")
		if err := fs.Parse(args[1:]); err != nil {
			return withCode(exitSetup, err)
		}
		if fs.NArg() != 1 {
			return usageErr("odek mcp login: exactly one server name is required")
		}
		spec, err := operatorURLServer(c, fs.Arg(0), stderr)
		if err != nil {
			return err
		}
		o := mcpauth.LoginOptions{Server: spec.Name, URL: spec.URL, Manual: *manual, In: stdin, Out: stderr}
		if spec.OAuth != nil {
			o.ClientID, o.Scopes = spec.OAuth.ClientID, spec.OAuth.Scopes
			if o.ClientSecret, err = spec.OAuth.ResolveSecret(spec.Name, os.Environ()); err != nil {
				return withCode(exitSetup, err)
			}
		}
		lctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		rec, err := mcpauth.Login(lctx, store, o)
		if err != nil {
			return withCode(exitSetup, err)
		}
		fmt.Fprintf(stdout, "odek mcp login: server %q: logged in (client %s); tokens in %s\n", spec.Name, rec.ClientID, store.Path(spec.Name))
		return nil
	case "logout":
		if len(args) != 2 {
			return usageErr("odek mcp logout: exactly one server name is required")
		}
		if err := mcpclient.ValidateName(args[1]); err != nil {
			return withCode(exitSetup, err)
		}
		revoked, err := mcpauth.Logout(ctx, store, args[1], nil)
		if err != nil {
			return withCode(exitSetup, err)
		}
		how := "tokens deleted"
		if revoked {
			how = "refresh token revoked, tokens deleted"
		}
		fmt.Fprintf(stdout, "odek mcp logout: server %q: %s\n", args[1], how)
		return nil
	case "status":
		entries, err := os.ReadDir(mcpauth.Dir(c.Home))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return withCode(exitSetup, err)
		}
		n := 0
		for _, e := range entries {
			name, ok := strings.CutSuffix(e.Name(), ".json")
			if !ok {
				continue
			}
			n++
			rec, err := store.Load(name)
			if err != nil {
				fmt.Fprintf(stdout, "%s\tunusable: %v\n", name, err)
				continue
			}
			exp := "no expiry"
			if !rec.Expiry.IsZero() {
				exp = "access token expires " + rec.Expiry.UTC().Format(time.RFC3339)
			}
			refresh := "no refresh token"
			if rec.RefreshToken != "" {
				refresh = "refreshable"
			}
			fmt.Fprintf(stdout, "%s\t%s\t%s, %s\n", name, mcpclient.RedactURL(rec.Resource), exp, refresh)
		}
		if n == 0 {
			fmt.Fprintln(stdout, "no MCP logins stored")
		}
		return nil
	default:
		return usageErr("odek mcp: unknown subcommand %q (login, logout, status)", args[0])
	}
}

// operatorURLServer finds name among the operator file's url servers.
func operatorURLServer(c *config.Config, name string, stderr io.Writer) (*ext.ServerSpec, error) {
	specs, warns, err := ext.ParseConfig(c.MCPServers.Operator, c.MCPServers.Project)
	if err != nil {
		return nil, withCode(exitSetup, err)
	}
	for _, w := range warns {
		fmt.Fprintln(stderr, "odek: warning:", w)
	}
	for i := range specs {
		s := &specs[i]
		if s.Name != name {
			continue
		}
		switch {
		case s.Err != nil:
			return nil, withCode(exitSetup, s.Err)
		case s.Source != ext.SourceOperator:
			return nil, usageErr("odek mcp login: server %q is declared in the project file %s; logins are for the operator's servers only", name, s.File)
		case s.URL == "":
			return nil, usageErr("odek mcp login: server %q is a command server; OAuth applies to url servers", name)
		}
		return s, nil
	}
	return nil, usageErr("odek mcp login: no server %q in the mcp_servers of %s", name, c.Layers.Operator.Path)
}
