package config

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// envVars is the environment layer, declared like every variable
// (environ.go). Every field is a string; an empty value counts as unset.
type envVars struct {
	Home         string `env:"ODEK_HOME" env-description:"odek home directory holding config.json and sessions (default ~/.odek)"`
	APIKey       string `env:"ODEK_API_KEY" env-description:"API key for the chat-completions endpoint; overrides api_key in config.json"`
	OpenAIAPIKey string `env:"OPENAI_API_KEY" env-description:"API key used when ODEK_API_KEY is unset or empty"`
	BaseURL      string `env:"ODEK_BASE_URL" env-description:"OpenAI-compatible API root, e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1"`
	Model        string `env:"ODEK_MODEL" env-description:"model id; overrides model in config.json and odek.json"`
	Provider     string `env:"ODEK_PROVIDER" env-description:"provider preset (deepseek, gemini, mistral, groq, openrouter, …; see docs/PROVIDERS.md): fills the base URL and model and reads the key from the provider's variable, e.g. DEEPSEEK_API_KEY"`
}

// readEnv fills envVars from environ (nil means the process
// environment), with the first KEY=VALUE occurrence winning as in
// os.Getenv.
func readEnv(environ []string) (envVars, error) {
	var v envVars
	err := ReadEnv(environ, &v)
	return v, err
}

func lookup(environ []string, key string) (string, bool) {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// HomeDir resolves ODEK_HOME from environ (nil means the process
// environment): $ODEK_HOME when set, with a leading "~" expanded, else
// ~/.odek. The result is absolute and clean. ErrNoHome when neither
// ODEK_HOME nor HOME (USERPROFILE on Windows) is set.
func HomeDir(environ []string) (string, error) {
	if environ == nil {
		environ = os.Environ()
	}
	userHome, _ := lookup(environ, "HOME")
	if userHome == "" && runtime.GOOS == "windows" {
		userHome, _ = lookup(environ, "USERPROFILE")
	}
	home, _ := lookup(environ, "ODEK_HOME")
	switch {
	case home == "~" || strings.HasPrefix(home, "~/") || strings.HasPrefix(home, `~\`):
		if userHome == "" {
			return "", fmt.Errorf("%w: ODEK_HOME starts with ~ but HOME is not set", ErrNoHome)
		}
		home = filepath.Join(userHome, home[1:])
	case home == "":
		if userHome == "" {
			return "", fmt.Errorf("%w: set ODEK_HOME or HOME", ErrNoHome)
		}
		home = filepath.Join(userHome, ".odek")
	}
	abs, err := filepath.Abs(home)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoHome, err)
	}
	return abs, nil
}
