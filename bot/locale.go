package bot

import (
	"sync"

	"github.com/odekrun/odek/bot/chatcore"
)

// tr is the built-in text key in lang (chatcore.Tr).
func tr(lang, key string, args ...any) string { return chatcore.Tr(lang, key, args...) }

// langOf maps a Telegram language_code to a language of texts.
func langOf(code string) string { return chatcore.Lang(code) }

// maxLangs bounds the remembered languages.
const maxLangs = 10000

// langTable is each user's language, from their latest message.
type langTable struct {
	mu sync.Mutex
	m  map[int64]string
}

// set remembers a user's language from their latest message.
func (t *langTable) set(userID int64, code string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil || len(t.m) > maxLangs {
		t.m = map[int64]string{}
	}
	t.m[userID] = langOf(code)
}

// get is the user's language ("en" when unknown).
func (t *langTable) get(userID int64) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.m[userID]; l != "" {
		return l
	}
	return "en"
}

// lang is the user's language ("en" when unknown).
func (b *Bot) lang(userID int64) string { return b.langs.get(userID) }
