package chatcore

// The built-in texts beyond help and commands: status lines, approval
// prompts, notices, limits and errors, in English and German (see texts).
// Every key exists in both languages with the same fmt verbs (checked by
// TestEveryTextInEveryLanguage).
var moreTexts = map[string]map[string]string{
	"en": {
		// context and compaction
		"ctx.used":        "Context: ~%s tokens",
		"ctx.of":          "Context: ~%s of %s tokens (%d %%)",
		"ctx.compacted":   "compacted %s ago (%s → %s tokens)",
		"ctx.never":       "not compacted yet",
		"compact.off":     "/compact is not available on this bot (it has no model endpoint of its own). The conversation is still compacted automatically when it fills the model's context.",
		"compact.busy":    "⏳ A job of this chat is unfinished: send /compact again when it has finished.",
		"compact.failed":  "❌ The conversation could not be compacted (%s); it is unchanged.",
		"compact.nothing": "Nothing to compact yet: the conversation is short.",
		"compact.done":    "🗜 Compacted: %d older message group(s) folded into the digest, about %s → %s tokens (the digest took %s tokens).",
		"use.cached":      ", %s input tokens from the prompt cache (%d %%)",
		// status lines
		"st.queued":   "📥 Queued — position %d. /stop cancels.",
		"st.starting": "⏳ Starting…",
		"st.working":  "⏳ Working",
		"st.step":     "step %d",
		"st.plan":     "plan %d/%d",
		"st.tokens":   "%s tokens",
		"st.attempt":  "attempt %d",
		"st.approval": "🔐 Waiting for your approval",
		"st.idle":     "Idle: no job running.",
		"st.more":     "%d more queued.",
		"st.mcp":      "%s: %s",
		// approvals
		"ap.wants":             "The agent wants to use %s.",
		"ap.class":             "Class: %s",
		"ap.needed":            "🔐 Approval needed",
		"ap.only":              "Only %s can answer. No answer by %s UTC (in %s) means no.",
		"ap.nobody":            "This bot does not know who asked for this job (it restarted since), so nobody can approve it: it will be denied at %s UTC.",
		"ap.approve":           "✅ Approve once",
		"ap.deny":              "❌ Deny",
		"ap.expired":           "⌛ No answer in time — denied.",
		"ap.unknown":           "Unknown button.",
		"ap.closedq":           "This question is no longer open.",
		"ap.notyours":          "Not yours: only the person who sent the request or a named approver can answer.",
		"ap.toolate":           "⌛ Too late: the question expired and was denied.",
		"ap.norecord":          "⚠️ The answer could not be recorded; the request will be denied at its deadline.",
		"ap.approved":          "✅ Approved once by %s.",
		"ap.denied":            "❌ Denied by %s.",
		"ap.c.stopped":         "⏹ Closed: the job was stopped, so this did not run.",
		"ap.c.ended":           "Closed: the job ended without this.",
		"ap.c.timeout":         "⏱ Closed: the job ran out of time, so this did not run.",
		"ap.c.edited":          "✏️ Closed: the message was edited.",
		"class.safe":           "reads only",
		"class.local_write":    "changes files in the work directory",
		"class.system_write":   "changes files outside the work directory",
		"class.destructive":    "deletes or overwrites data",
		"class.code_execution": "runs a program",
		"class.network_egress": "connects to the network",
		"class.install":        "installs software",
		"class.unknown":        "does something odek cannot classify",
		// access, limits, queue
		"not.allowed":    "⛔ You are not allowed to use this bot. Your Telegram user id is %d; the operator can add it to ODEK_TELEGRAM_ALLOWED_USERS.",
		"not.auth":       "Not authorized.",
		"budget.spent":   "🚫 This chat has used its daily budget of %s tokens. It resets at 00:00 UTC (in %s).",
		"budget.held":    "⏳ What is left of this chat's daily budget of %s tokens is reserved by its %d unfinished job(s): each job may spend at most the rest of the day's budget. Send this again when they have finished.",
		"budget.stopped": "🚫 The job stopped: it used what was left of this chat's daily budget of %s tokens. It resets at 00:00 UTC (in %s).",
		"budget.warn":    "⚠️ This chat has used %d %% of its daily budget of %s tokens (resets at 00:00 UTC, in %s).",
		"slow.down":      "🐢 Slow down: at most %d new requests per minute. Try again in %s.",
		"enqueue.fail":   "❌ Could not queue your request; please try again in a moment.",
		"enqueue.large":  "❌ That message is too long to run as a job.",
		"dead":           "❌ The job was abandoned by its worker %d times and was dropped. An operator can retry it with: odek queue retry %s",
		"no.answer":      "(The agent finished without an answer.)",
		// usage
		"use.today":   "Today (UTC): %s tokens",
		"use.of":      " of %s (%d %%)",
		"use.jobs":    ", %d job(s).",
		"use.resets":  " Resets in %s.",
		"use.week":    "Last 7 days: %s",
		"use.earlier": "Earlier days:",
		"day.tokens":  "%s tokens",
		"day.jobs":    ", %d job(s)",
		// artifacts and files
		"art.usage":   "Usage: /artifact <id> (the id from the 📎 line of a reply).",
		"art.off":     "Artifacts are not available on this bot (ODEK_ARTIFACTS_DIR is not set).",
		"art.none":    "No artifact %q in this chat (ids are kept for the %d most recent artifacts since the bot started).",
		"art.invalid": "❌ That artifact can no longer be sent: it was moved, changed or is outside this chat's directory.",
		"art.large":   "❌ That artifact is too large to send here: Telegram bots may send files up to %s.",
		"art.unread":  "❌ That artifact could not be read.",
		"file.large":  "❌ That file is too large: this bot takes files up to %s (ODEK_TELEGRAM_MAX_FILE_BYTES).",
		"file.off":    "❌ This bot cannot receive files (its operator has not set ODEK_ARTIFACTS_DIR). Paste the text instead.",
		"file.save":   "❌ The file could not be saved; please try again later.",
		"file.fetch":  "❌ The file could not be downloaded from Telegram; please send it again.",
		"file.quota":  "❌ That file does not fit: this chat's files take %s of its %s storage quota (ODEK_TELEGRAM_CHAT_STORAGE_BYTES), so at most %s more. Delete files first, or ask the operator.",
		// restarts
		"voice.off":     "🎙 Voice messages cannot be transcribed on this bot (it has no speech-to-text endpoint). Please send your request as text.",
		"voice.none":    "🎙 Voice messages cannot be transcribed here: the model endpoint has no speech-to-text (/audio/transcriptions answered 404). Please send your request as text.",
		"voice.large":   "❌ That recording is too large to transcribe: up to %s.",
		"voice.failed":  "❌ The voice message could not be transcribed (%s). Please try again or send text.",
		"voice.empty":   "🎙 I could not make out any words in that recording. Please try again or send text.",
		"voice.heard":   "🎙 I heard:\n“%s”",
		"lost":          "odek restarted and your unfinished request was lost with it. Please send it again.",
		"resume":        "⏸ odek-bot is restarting. Your request keeps running and its answer comes here when the bot is back.",
		"interrupt":     "⚠️ odek-bot stopped before your request finished, and it was lost with it. Please send it again.",
		"model.none":    "This bot offers no choice of model (its operator has not set ODEK_TELEGRAM_MODELS).",
		"model.list":    "🧠 Model for this chat: %s.\nChoose one below or with /model <name>; /model default goes back to the default.",
		"model.default": "the default",
		"model.set":     "🧠 This chat now uses %s from its next request.",
		"model.reset":   "🧠 This chat now uses the default model from its next request.",
		"model.unknown": "There is no model %q here. Choose one of: %s.",
		"model.status":  "Model: %s",
		"orphan":        "⚠️ Interrupted: odek-bot stopped unexpectedly while this request was running. If a worker was still on it, its answer comes here; if nothing arrives, please send it again.",
		"orphan.lost":   "⚠️ Interrupted: odek-bot stopped unexpectedly while this request was running, and it was lost with it. Please send it again.",
	},
	"de": {
		// Kontext und Verdichtung
		"ctx.used":        "Kontext: ~%s Tokens",
		"ctx.of":          "Kontext: ~%s von %s Tokens (%d %%)",
		"ctx.compacted":   "verdichtet vor %s (%s → %s Tokens)",
		"ctx.never":       "noch nicht verdichtet",
		"compact.off":     "/compact ist auf diesem Bot nicht verfügbar (er hat keinen eigenen Modellzugang). Das Gespräch wird trotzdem automatisch verdichtet, wenn es den Kontext des Modells füllt.",
		"compact.busy":    "⏳ Ein Auftrag dieses Chats ist noch nicht fertig: sende /compact noch einmal, wenn er fertig ist.",
		"compact.failed":  "❌ Das Gespräch konnte nicht verdichtet werden (%s); es ist unverändert.",
		"compact.nothing": "Noch nichts zu verdichten: das Gespräch ist kurz.",
		"compact.done":    "🗜 Verdichtet: %d ältere Nachrichtengruppe(n) in die Zusammenfassung übernommen, etwa %s → %s Tokens (die Zusammenfassung kostete %s Tokens).",
		"use.cached":      ", %s Eingabe-Tokens aus dem Prompt-Cache (%d %%)",
		"st.queued":       "📥 In der Warteschlange — Position %d. /stop bricht ab.",
		"st.starting":     "⏳ Startet…",
		"st.working":      "⏳ Arbeitet",
		"st.step":         "Schritt %d",
		"st.plan":         "Plan %d/%d",
		"st.tokens":       "%s Tokens",
		"st.attempt":      "Versuch %d",
		"st.approval":     "🔐 Wartet auf deine Freigabe",
		"st.idle":         "Untätig: kein Auftrag läuft.",
		"st.more":         "%d weitere in der Warteschlange.",
		"st.mcp":          "%s: %s",

		"ap.wants":             "Der Agent möchte %s verwenden.",
		"ap.class":             "Klasse: %s",
		"ap.needed":            "🔐 Freigabe nötig",
		"ap.only":              "Nur %s kann antworten. Ohne Antwort bis %s UTC (in %s) gilt Nein.",
		"ap.nobody":            "Dieser Bot weiß nicht, wer den Auftrag gestellt hat (er wurde seitdem neu gestartet), daher kann niemand ihn freigeben: er wird um %s UTC abgelehnt.",
		"ap.approve":           "✅ Einmal erlauben",
		"ap.deny":              "❌ Ablehnen",
		"ap.expired":           "⌛ Keine Antwort rechtzeitig — abgelehnt.",
		"ap.unknown":           "Unbekannte Schaltfläche.",
		"ap.closedq":           "Diese Frage ist nicht mehr offen.",
		"ap.notyours":          "Nicht deine Frage: nur die Person, die die Anfrage gestellt hat, oder eine benannte freigebende Person kann antworten.",
		"ap.toolate":           "⌛ Zu spät: die Frage ist abgelaufen und wurde abgelehnt.",
		"ap.norecord":          "⚠️ Die Antwort konnte nicht gespeichert werden; die Anfrage wird bei Fristende abgelehnt.",
		"ap.approved":          "✅ Einmal erlaubt von %s.",
		"ap.denied":            "❌ Abgelehnt von %s.",
		"ap.c.stopped":         "⏹ Geschlossen: der Auftrag wurde gestoppt, das lief also nicht.",
		"ap.c.ended":           "Geschlossen: der Auftrag endete ohne dies.",
		"ap.c.timeout":         "⏱ Geschlossen: die Zeit des Auftrags lief ab, das lief also nicht.",
		"ap.c.edited":          "✏️ Geschlossen: die Nachricht wurde bearbeitet.",
		"class.safe":           "liest nur",
		"class.local_write":    "ändert Dateien im Arbeitsverzeichnis",
		"class.system_write":   "ändert Dateien außerhalb des Arbeitsverzeichnisses",
		"class.destructive":    "löscht oder überschreibt Daten",
		"class.code_execution": "führt ein Programm aus",
		"class.network_egress": "verbindet sich mit dem Netzwerk",
		"class.install":        "installiert Software",
		"class.unknown":        "tut etwas, das odek nicht einordnen kann",

		"not.allowed":    "⛔ Du darfst diesen Bot nicht verwenden. Deine Telegram-Benutzer-ID ist %d; der Betreiber kann sie zu ODEK_TELEGRAM_ALLOWED_USERS hinzufügen.",
		"not.auth":       "Nicht berechtigt.",
		"budget.spent":   "🚫 Dieser Chat hat sein Tagesbudget von %s Tokens verbraucht. Es wird um 00:00 UTC zurückgesetzt (in %s).",
		"budget.held":    "⏳ Der Rest des Tagesbudgets dieses Chats von %s Tokens ist für seine %d laufenden Aufträge reserviert: jeder Auftrag darf höchstens den Rest des Tagesbudgets verbrauchen. Sende dies noch einmal, wenn sie fertig sind.",
		"budget.stopped": "🚫 Der Auftrag wurde angehalten: er hat den Rest des Tagesbudgets dieses Chats von %s Tokens verbraucht. Es wird um 00:00 UTC zurückgesetzt (in %s).",
		"budget.warn":    "⚠️ Dieser Chat hat %d %% seines Tagesbudgets von %s Tokens verbraucht (Zurücksetzung um 00:00 UTC, in %s).",
		"slow.down":      "🐢 Langsamer: höchstens %d neue Anfragen pro Minute. Versuche es in %s wieder.",
		"enqueue.fail":   "❌ Deine Anfrage konnte nicht eingereiht werden; bitte versuche es gleich noch einmal.",
		"enqueue.large":  "❌ Diese Nachricht ist zu lang für einen Auftrag.",
		"dead":           "❌ Der Auftrag wurde %d-mal von seinem Worker aufgegeben und verworfen. Ein Betreiber kann ihn wiederholen mit: odek queue retry %s",
		"no.answer":      "(Der Agent ist ohne Antwort fertig geworden.)",

		"use.today":   "Heute (UTC): %s Tokens",
		"use.of":      " von %s (%d %%)",
		"use.jobs":    ", %d Auftrag/Aufträge.",
		"use.resets":  " Zurücksetzung in %s.",
		"use.week":    "Letzte 7 Tage: %s",
		"use.earlier": "Frühere Tage:",
		"day.tokens":  "%s Tokens",
		"day.jobs":    ", %d Auftrag/Aufträge",

		"art.usage":   "Verwendung: /artifact <id> (die ID aus der 📎-Zeile einer Antwort).",
		"art.off":     "Artefakte sind bei diesem Bot nicht verfügbar (ODEK_ARTIFACTS_DIR ist nicht gesetzt).",
		"art.none":    "Kein Artefakt %q in diesem Chat (IDs bleiben für die %d neuesten Artefakte seit dem Start des Bots).",
		"art.invalid": "❌ Dieses Artefakt kann nicht mehr gesendet werden: es wurde verschoben, geändert oder liegt außerhalb des Verzeichnisses dieses Chats.",
		"art.large":   "❌ Dieses Artefakt ist zu groß: Telegram-Bots dürfen Dateien bis %s senden.",
		"art.unread":  "❌ Dieses Artefakt konnte nicht gelesen werden.",
		"file.large":  "❌ Diese Datei ist zu groß: dieser Bot nimmt Dateien bis %s an (ODEK_TELEGRAM_MAX_FILE_BYTES).",
		"file.off":    "❌ Dieser Bot kann keine Dateien empfangen (sein Betreiber hat ODEK_ARTIFACTS_DIR nicht gesetzt). Füge den Text stattdessen ein.",
		"file.save":   "❌ Die Datei konnte nicht gespeichert werden; bitte versuche es später noch einmal.",
		"file.fetch":  "❌ Die Datei konnte nicht von Telegram geladen werden; bitte sende sie noch einmal.",
		"file.quota":  "❌ Diese Datei passt nicht: die Dateien dieses Chats belegen %s seines Speicherkontingents von %s (ODEK_TELEGRAM_CHAT_STORAGE_BYTES), es passen höchstens noch %s. Lösche zuerst Dateien oder frage den Betreiber.",

		"voice.off":     "🎙 Sprachnachrichten können bei diesem Bot nicht umgeschrieben werden (er hat keinen Spracherkennungs-Endpunkt). Bitte sende deine Anfrage als Text.",
		"voice.none":    "🎙 Sprachnachrichten können hier nicht umgeschrieben werden: der Modell-Endpunkt hat keine Spracherkennung (/audio/transcriptions antwortete 404). Bitte sende deine Anfrage als Text.",
		"voice.large":   "❌ Diese Aufnahme ist zu groß zum Umschreiben: bis %s.",
		"voice.failed":  "❌ Die Sprachnachricht konnte nicht umgeschrieben werden (%s). Bitte versuche es noch einmal oder sende Text.",
		"voice.empty":   "🎙 In dieser Aufnahme konnte ich keine Worte erkennen. Bitte versuche es noch einmal oder sende Text.",
		"voice.heard":   "🎙 Ich habe verstanden:\n„%s“",
		"lost":          "odek wurde neu gestartet, und deine unfertige Anfrage ging dabei verloren. Bitte sende sie noch einmal.",
		"resume":        "⏸ odek-bot startet neu. Deine Anfrage läuft weiter, und ihre Antwort kommt hierher, sobald der Bot zurück ist.",
		"interrupt":     "⚠️ odek-bot wurde beendet, bevor deine Anfrage fertig war, und sie ging dabei verloren. Bitte sende sie noch einmal.",
		"model.none":    "Dieser Bot bietet keine Wahl des Modells (sein Betreiber hat ODEK_TELEGRAM_MODELS nicht gesetzt).",
		"model.list":    "🧠 Modell für diesen Chat: %s.\nWähle unten eines oder mit /model <Name>; /model default kehrt zum Standard zurück.",
		"model.default": "der Standard",
		"model.set":     "🧠 Dieser Chat verwendet ab der nächsten Anfrage %s.",
		"model.reset":   "🧠 Dieser Chat verwendet ab der nächsten Anfrage das Standardmodell.",
		"model.unknown": "Hier gibt es kein Modell %q. Wähle eines von: %s.",
		"model.status":  "Modell: %s",
		"orphan":        "⚠️ Unterbrochen: odek-bot wurde unerwartet beendet, während diese Anfrage lief. Falls ein Worker noch daran war, kommt seine Antwort hierher; falls nichts kommt, sende sie bitte noch einmal.",
		"orphan.lost":   "⚠️ Unterbrochen: odek-bot wurde unerwartet beendet, während diese Anfrage lief, und sie ging dabei verloren. Bitte sende sie noch einmal.",
	},
}

// months are the month names of /usage's month line.
var months = map[string][12]string{
	"en": {"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"},
	"de": {"Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober", "November", "Dezember"},
}

// Lookup finds a text key in lang, then in English.
func Lookup(lang, key string) (string, bool) {
	for _, l := range []string{lang, "en"} {
		if f, ok := texts[l][key]; ok {
			return f, true
		}
		if f, ok := moreTexts[l][key]; ok {
			return f, true
		}
		if f, ok := busyTexts[l][key]; ok {
			return f, true
		}
		if f, ok := streamTexts[l][key]; ok {
			return f, true
		}
		if f, ok := voiceApproveTexts[l][key]; ok {
			return f, true
		}
	}
	return "", false
}
