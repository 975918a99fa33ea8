package bot

import (
	"context"
	"errors"
	"fmt"
	"github.com/odekrun/odek/bot/tgformat"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/bot/tgclient"
	"github.com/odekrun/odek/internal/chatdir"
)

// isGroup reports whether the message comes from a group or supergroup.
func isGroup(m *tgbotapi.Message) bool {
	return m.Chat != nil && (m.Chat.IsGroup() || m.Chat.IsSuperGroup())
}

// addressed reports whether a group message is meant for the bot: a
// mention of its username (or a text mention of it), a reply to one of
// its messages, or one of the configured keywords as a whole word. Bot
// commands are judged separately. The bot does not rely on privacy mode,
// which is off when the bot is an admin.
func (b *Bot) addressed(m *tgbotapi.Message, text string) bool {
	self := b.tg.Self()
	if m.ReplyToMessage != nil && m.ReplyToMessage.From != nil && m.ReplyToMessage.From.ID == self.ID {
		return true
	}
	ents := m.Entities
	if m.Text == "" {
		ents = m.CaptionEntities
	}
	for _, e := range ents {
		switch e.Type {
		case "mention":
			if strings.EqualFold(entityText(text, e), "@"+self.UserName) {
				return true
			}
		case "text_mention":
			if e.User != nil && e.User.ID == self.ID {
				return true
			}
		}
	}
	if len(b.cfg.Keywords) > 0 {
		words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' })
		for _, w := range words {
			for _, k := range b.cfg.Keywords {
				if w == strings.ToLower(k) {
					return true
				}
			}
		}
	}
	return false
}

// entityText is the text an entity covers (offsets in UTF-16 units).
func entityText(text string, e tgbotapi.MessageEntity) string {
	u := 0
	start, end := -1, len(text)
	for i, r := range text {
		if u == e.Offset {
			start = i
		}
		if u == e.Offset+e.Length {
			end = i
			break
		}
		if r >= 0x10000 {
			u += 2
		} else {
			u++
		}
	}
	if start < 0 {
		return ""
	}
	return text[start:end]
}

// stripMention removes "@<bot username>" (ASCII, matched without regard to
// ASCII case) from a goal.
func stripMention(text, username string) string {
	if username == "" {
		return text
	}
	at := "@" + username
	var b strings.Builder
	for i := 0; i < len(text); {
		if len(text)-i >= len(at) && asciiFold(text[i:i+len(at)], at) && (i+len(at) == len(text) || !isNameByte(text[i+len(at)])) {
			i += len(at)
			if i < len(text) && text[i] == ' ' {
				i++ // "@bot do it" → "do it"
			}
			continue
		}
		b.WriteByte(text[i])
		i++
	}
	return strings.TrimSpace(b.String())
}

// isNameByte reports whether c may be part of a Telegram username.
func isNameByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// asciiFold reports whether a and b (of equal length) are equal ignoring
// ASCII case.
func asciiFold(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// unsupportedKind is the texts key suffix ("kind.<x>") of a message kind
// the bot cannot take, or "".
func unsupportedKind(m *tgbotapi.Message) string {
	switch {
	case m.Sticker != nil:
		return "stickers"
	case m.Location != nil || m.Venue != nil:
		return "locations"
	case m.Poll != nil:
		return "polls"
	case m.Video != nil || m.VideoNote != nil || m.Animation != nil:
		return "videos"
	case m.Contact != nil:
		return "contacts"
	case m.Dice != nil || m.Game != nil:
		return "games"
	}
	return ""
}

// upload is a file a user sent, saved in the chat's directory.
type upload struct {
	kind  string // "document" or "photo"
	name  string // as the user named it (cleaned)
	mime  string
	bytes int64
	rel   string // path relative to the chat's directory
	art   string // path relative to ArtifactDir (the chat's directory name, then rel)
}

// goalLine tells the model which file arrived and where.
func (u upload) goalLine() string {
	media := u.mime
	if media == "" {
		media = "unknown type"
	}
	return fmt.Sprintf("[Attachment: the user sent the %s %q (%s, %s). It is saved as %s in your working directory.]",
		u.kind, u.name, media, tgformat.HumanBytes(u.bytes), u.rel)
}

// attachment returns the file of a document or photo message.
func attachment(m *tgbotapi.Message) (fileID, kind, name, mime string, size int64, ok bool) {
	switch {
	case m.Document != nil:
		d := m.Document
		return d.FileID, "document", d.FileName, d.MimeType, int64(d.FileSize), true
	case len(m.Photo) > 0:
		p := m.Photo[len(m.Photo)-1] // the largest size
		return p.FileID, "photo", "photo-" + strconv.Itoa(m.MessageID) + ".jpg", "image/jpeg", int64(p.FileSize), true
	}
	return "", "", "", "", 0, false
}

// safeFileName keeps a user's file name usable and harmless: its base
// name only, no control characters, no leading dot, at most 100
// characters; "file" when nothing is left.
func safeFileName(name string) string {
	name = cleanText(name)
	name = name[strings.LastIndexAny(name, `/\`)+1:]
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' || strings.ContainsRune(`<>:"|?*`, r) {
			return '_'
		}
		return r
	}, name)
	name = strings.TrimLeft(strings.TrimSpace(name), ".")
	if r := []rune(name); len(r) > 100 {
		ext := filepath.Ext(name)
		if len([]rune(ext)) > 10 {
			ext = ""
		}
		name = string(r[:100-len([]rune(ext))]) + ext
	}
	if name == "" {
		return "file"
	}
	return name
}

// saveUpload downloads a user's file into <ArtifactDir>/<chat id>/uploads
// through an os.Root on the chat's directory, so no name or symlink leads
// out of it, within the chat's storage quota (Config.ChatStorageBytes): a
// file whose reported size does not fit is refused before anything is
// written, and the download is written through a quotaWriter that stops
// at what is left (the file is then removed). It returns a message for the
// user when the file cannot be taken.
func (b *Bot) saveUpload(ctx context.Context, chatID int64, lang string, m *tgbotapi.Message) (*upload, string) {
	fileID, kind, name, mime, size, _ := attachment(m)
	limit := b.cfg.MaxDownloadBytes
	tooBig := tr(lang, "file.large", tgformat.HumanBytes(limit))
	if b.cfg.ArtifactDir == "" {
		return nil, tr(lang, "file.off")
	}
	if size > limit {
		return nil, tooBig
	}
	// The chat's directory has the unguessable name the workers use
	// (package chatdir).
	dir, err := chatdir.Ensure(b.cfg.ArtifactDir, chatID)
	if err != nil {
		b.log.WithError(err).Error("bot: cannot create the chat's directory")
		return nil, tr(lang, "file.save")
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.log.WithError(err).Error("bot: cannot open the chat's directory")
		return nil, tr(lang, "file.save")
	}
	defer root.Close()
	quota, left := b.cfg.ChatStorageBytes, limit
	var overQuota string
	if quota > 0 {
		used, err := diskUsage(root)
		if err != nil {
			b.log.WithError(err).WithField("chat_id", chatID).Error("bot: cannot measure the chat's directory against its storage quota")
			return nil, tr(lang, "file.save")
		}
		free := max(quota-used, 0)
		overQuota = tr(lang, "file.quota", tgformat.HumanBytes(used), tgformat.HumanBytes(quota), tgformat.HumanBytes(free))
		if size > free || free == 0 {
			b.log.WithFields(logrus.Fields{"chat_id": chatID, "used": used, "quota": quota, "size": size}).Info("bot: refused an upload over the chat's storage quota")
			return nil, overQuota
		}
		left = min(left, free)
	}
	if err := root.Mkdir("uploads", 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		b.log.WithError(err).Error("bot: cannot create the chat's upload directory")
		return nil, tr(lang, "file.save")
	}
	base := safeFileName(name)
	var f *os.File
	var rel string
	for i := 0; i < 100; i++ {
		cand := base
		if i > 0 {
			ext := filepath.Ext(base)
			cand = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(base, ext), i+1, ext)
		}
		rel = "uploads/" + cand
		f, err = root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	if err != nil {
		b.log.WithError(err).Error("bot: cannot create the uploaded file")
		return nil, tr(lang, "file.save")
	}
	w := &quotaWriter{w: f, left: left}
	n, err := b.tg.Download(ctx, fileID, left, w)
	f.Close()
	if err != nil {
		root.Remove(rel)
		switch {
		case (w.over || errors.Is(err, tgclient.ErrFileTooBig)) && left < limit:
			b.log.WithFields(logrus.Fields{"chat_id": chatID, "quota": quota}).Info("bot: stopped an upload at the chat's storage quota and removed it")
			return nil, overQuota
		case w.over || errors.Is(err, tgclient.ErrFileTooBig):
			return nil, tooBig
		}
		b.log.WithError(err).WithField("chat_id", chatID).Warn("bot: downloading a user's file failed")
		return nil, tr(lang, "file.fetch")
	}
	return &upload{kind: kind, name: oneLine(name, 100), mime: oneLine(mime, 80), bytes: n, rel: rel, art: filepath.Base(dir) + "/" + rel}, ""
}
