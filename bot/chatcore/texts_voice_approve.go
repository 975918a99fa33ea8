package chatcore

// voiceApproveTexts are the texts of voice answers (/voice) and of
// approvals that survive restarts (issue 26, points 4 and 6), in English
// and German.
var voiceApproveTexts = map[string]map[string]string{
	"en": {
		"vo.show": "Spoken answers: %s.\n" +
			"/voice on — every answer comes as a voice message too\n" +
			"/voice mirror — answers are spoken when you send a voice message\n" +
			"/voice off — text only",
		"vo.on":        "on (every answer)",
		"vo.mirror":    "mirror (when you speak)",
		"vo.off":       "off",
		"vo.set":       "✅ Spoken answers: %s.",
		"vo.bad":       "Unknown choice %q: use /voice on, /voice off or /voice mirror.",
		"vo.none":      "🔇 Spoken answers are not available on this bot (it has no text-to-speech endpoint).",
		"vo.failed":    "🔇 The answer could not be spoken (%s), so it came as text only.",
		"vo.sendfail":  "🔇 The voice message could not be sent, so the answer came as text only.",
		"ap.user":      "user %d",
		"ap.onlyor":    "Only %s or an approver can answer. No answer by %s UTC (in %s) means no.",
		"ap.approvers": "Only an approver can answer. No answer by %s UTC (in %s) means no.",
		"ap.dm":        "in chat %d, asked by %s",
		"ap.dmonly":    "You are an approver: your answer counts for that chat. No answer by %s UTC (in %s) means no.",
		"ap.session":   "♾ Allow for this session",
		"ap.sessioned": "♾ Allowed for this session by %s: this exact request runs without asking again until /new.",
	},
	"de": {
		"vo.show": "Gesprochene Antworten: %s.\n" +
			"/voice on — jede Antwort kommt auch als Sprachnachricht\n" +
			"/voice mirror — Antworten werden gesprochen, wenn du eine Sprachnachricht schickst\n" +
			"/voice off — nur Text",
		"vo.on":        "an (jede Antwort)",
		"vo.mirror":    "spiegeln (wenn du sprichst)",
		"vo.off":       "aus",
		"vo.set":       "✅ Gesprochene Antworten: %s.",
		"vo.bad":       "Unbekannte Wahl %q: nutze /voice on, /voice off oder /voice mirror.",
		"vo.none":      "🔇 Gesprochene Antworten gibt es bei diesem Bot nicht (er hat keinen Sprachausgabe-Endpunkt).",
		"vo.failed":    "🔇 Die Antwort konnte nicht gesprochen werden (%s), daher kam sie nur als Text.",
		"vo.sendfail":  "🔇 Die Sprachnachricht konnte nicht gesendet werden, daher kam die Antwort nur als Text.",
		"ap.user":      "Benutzer %d",
		"ap.onlyor":    "Nur %s oder eine freigebende Person kann antworten. Ohne Antwort bis %s UTC (in %s) gilt Nein.",
		"ap.approvers": "Nur eine freigebende Person kann antworten. Ohne Antwort bis %s UTC (in %s) gilt Nein.",
		"ap.dm":        "im Chat %d, angefragt von %s",
		"ap.dmonly":    "Du gibst frei: deine Antwort gilt für diesen Chat. Ohne Antwort bis %s UTC (in %s) gilt Nein.",
		"ap.session":   "♾ Für diese Sitzung erlauben",
		"ap.sessioned": "♾ Für diese Sitzung erlaubt von %s: genau diese Anfrage läuft bis /new ohne erneute Frage.",
	},
}
