package chatcore

import (
	"fmt"
	"strings"
)

// Built-in texts in English and German, chosen by the Telegram user's
// language_code ("de", "de-AT", … → German; anything else → English).
// Each entry is a fmt format; a key missing in a language falls back to
// English.
var texts = map[string]map[string]string{
	"en": {
		"help": "🤖 odek runs an agent on each message you send and replies with the result.\n\n" +
			"/new — start a fresh conversation\n/stop — cancel the running job and empty the queue\n" +
			"/status — running job, queue and today's usage\n/usage — today's tokens and budget\n" +
			"/artifact <id> — send a file a job produced\n/retry — run your last request again\n" +
			"/compact — fold the older conversation into a digest now\n" +
			"/model — choose the model for this chat\n/busy — what happens to messages sent while a job runs\n" +
			"/stream — what this chat shows while a job runs\n" +
			"/voice — spoken answers: on, off or mirror\n\n" +
			"Limits: %s.\nYour Telegram user id: %d",
		"lim.budget":    "%s tokens per chat per day (UTC)",
		"lim.rate":      "%d requests per minute",
		"lim.timeout":   "%s per job",
		"new":           "🆕 New conversation: your next message starts a fresh session.",
		"nothing.stop":  "Nothing to stop.",
		"stopping":      "⏹ Stopping %d job(s).",
		"unknown":       "Unknown command. /help lists the commands.",
		"no.retry":      "Nothing to retry: send a request first.",
		"text.only":     "I can only read text for now: send your request as a text message.",
		"unsupported":   "I cannot take %s yet. I can read text messages, documents (files) and photos, with or without a caption, and voice messages.",
		"stopped":       "⏹ Stopped.",
		"timed.out":     "⏱ Stopped: the job ran longer than the limit of %s.",
		"failed":        "❌ The job failed",
		"admins.only":   "Only this group's admins can use /%s here.",
		"kind.stickers": "stickers", "kind.locations": "locations", "kind.polls": "polls",
		"kind.voice": "voice and audio messages", "kind.videos": "videos", "kind.contacts": "contacts", "kind.games": "games",
	},
	"de": {
		"help": "🤖 odek lässt für jede Nachricht einen Agenten arbeiten und antwortet mit dem Ergebnis.\n\n" +
			"/new — ein neues Gespräch beginnen\n/stop — den laufenden Auftrag abbrechen und die Warteschlange leeren\n" +
			"/status — laufender Auftrag, Warteschlange und heutiger Verbrauch\n/usage — heutige Tokens und Budget\n" +
			"/artifact <id> — eine Datei senden, die ein Auftrag erzeugt hat\n/retry — deine letzte Anfrage noch einmal ausführen\n" +
			"/compact — das ältere Gespräch jetzt zusammenfassen\n" +
			"/model — das Modell für diesen Chat wählen\n/busy — was mit Nachrichten geschieht, die während eines Auftrags kommen\n" +
			"/stream — was dieser Chat zeigt, während ein Auftrag läuft\n" +
			"/voice — gesprochene Antworten: on, off oder mirror\n\n" +
			"Grenzen: %s.\nDeine Telegram-Benutzer-ID: %d",
		"lim.budget":    "%s Tokens pro Chat und Tag (UTC)",
		"lim.rate":      "%d Anfragen pro Minute",
		"lim.timeout":   "%s pro Auftrag",
		"new":           "🆕 Neues Gespräch: deine nächste Nachricht beginnt eine neue Sitzung.",
		"nothing.stop":  "Nichts zu stoppen.",
		"stopping":      "⏹ Stoppe %d Auftrag/Aufträge.",
		"unknown":       "Unbekannter Befehl. /help zeigt die Befehle.",
		"no.retry":      "Nichts zu wiederholen: sende zuerst eine Anfrage.",
		"text.only":     "Ich kann vorerst nur Text lesen: sende deine Anfrage als Textnachricht.",
		"unsupported":   "%s kann ich noch nicht annehmen. Ich lese Textnachrichten, Dokumente (Dateien) und Fotos, mit oder ohne Beschriftung, und Sprachnachrichten.",
		"stopped":       "⏹ Gestoppt.",
		"timed.out":     "⏱ Gestoppt: der Auftrag lief länger als das Limit von %s.",
		"failed":        "❌ Der Auftrag ist fehlgeschlagen",
		"admins.only":   "Nur die Admins dieser Gruppe können /%s hier verwenden.",
		"kind.stickers": "Sticker", "kind.locations": "Standorte", "kind.polls": "Umfragen",
		"kind.voice": "Sprach- und Audionachrichten", "kind.videos": "Videos", "kind.contacts": "Kontakte", "kind.games": "Spiele",
	},
}

// Lang maps a Telegram language_code to a language of texts.
func Lang(code string) string {
	if strings.HasPrefix(strings.ToLower(code), "de") {
		return "de"
	}
	return "en"
}

// Tr renders the text key in lang with args.
func Tr(lang, key string, args ...any) string {
	f, _ := Lookup(lang, key)
	if len(args) == 0 {
		return f
	}
	return fmt.Sprintf(f, args...)
}

// MonthName is month m (1–12) in lang.
func MonthName(lang string, m int) string {
	if m < 1 || m > 12 {
		return ""
	}
	ms, ok := months[lang]
	if !ok {
		ms = months["en"]
	}
	return ms[m-1]
}
