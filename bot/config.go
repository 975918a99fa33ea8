package bot

import (
	"errors"
	"fmt"
	"github.com/odekrun/odek/schedule"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/odekrun/odek/bot/chatcore"
	"github.com/odekrun/odek/bot/tgclient"
	"github.com/odekrun/odek/queue"
	"github.com/sirupsen/logrus"
)

// DefaultAPIEndpoint is the public Bot API; the two %s are the token and the
// method, as telegram-bot-api expects.
const DefaultAPIEndpoint = "https://api.telegram.org/bot%s/%s"

// MaxUploadBytes is the largest document the public Bot API accepts from a
// bot (sendDocument, 50 MB).
const MaxUploadBytes int64 = 50 << 20

// MaxDownloadBytes is the largest file the public Bot API lets a bot
// download with getFile (20 MB).
const MaxDownloadBytes int64 = 20 << 20

// DefaultChatStorageBytes is Config.ChatStorageBytes' default: 1 GiB per
// chat.
const DefaultChatStorageBytes int64 = 1 << 30

// Config configures a Bot. Only Token and an access rule (AllowedUsers,
// AllowedChats or AllowAll) are required; every other zero value picks the
// default documented on the field.
type Config struct {
	// Token is the bot token from @BotFather. It is never logged.
	Token string
	// APIEndpoint is the Bot API root: either a base URL such as
	// "http://127.0.0.1:8081" (a self-hosted Bot API server, tests) or a
	// format with two %s for token and method. "" means DefaultAPIEndpoint.
	APIEndpoint string

	// AllowedUsers are Telegram user ids allowed to use the bot anywhere.
	AllowedUsers []int64
	// AllowedChats are chat ids (groups included, negative) in which every
	// member may use the bot.
	AllowedChats []int64
	// AllowAll opens the bot to everyone; New logs a warning. Without it
	// and with both allowlists empty New fails with ErrNoAccessRule.
	AllowAll bool

	// DailyTokenBudget is the tokens (prompt + completion) each chat may use
	// per UTC day; a warning goes out at 80 %, new jobs are refused once it
	// is spent. Each job carries what is left (less what the chat's
	// unfinished jobs hold) as its budget's MaxTotalTokens, so the worker
	// stops it there. 0 means no budget.
	DailyTokenBudget int64
	// UserBudget, UserBudgets, GuestBudget and Admins are the per-user
	// budgets (bot/budgets.go, kept in the queue's budget store): every
	// user's daily and monthly caps, overrides per user id, the shared
	// pool of group members the allowlist does not name (nil: no guests),
	// and the users who may see everyone's usage (/usage all).
	UserBudget  queue.Caps
	UserBudgets map[int64]queue.Caps
	GuestBudget *queue.Caps
	Admins      []int64
	// UserJobsPerMinute is how many new jobs one user may start per minute
	// (a token bucket with a burst of the same size). 0 means 6; negative
	// means no limit.
	UserJobsPerMinute int
	// AgentTimeout is the longest a job may run, from its start on a
	// worker; the bot then cancels it. It is also sent to the worker as
	// the job budget's max_runtime_seconds. 0 means 900 s.
	AgentTimeout time.Duration
	// JobBudget holds extra limits sent with every job (they may only
	// lower the worker's); its MaxRuntimeSeconds is AgentTimeout's. The
	// zero value means none beyond max_runtime_seconds.
	JobBudget queue.Budget

	// ArtifactDir is the directory, shared with the workers, that
	// queue.ArtifactMeta paths are relative to; /artifact sends files only
	// from inside it. "" disables /artifact.
	ArtifactDir string
	// MaxUploadBytes caps a document sent by /artifact. 0 means
	// MaxUploadBytes (the public Bot API limit).
	MaxUploadBytes int64
	// SendArtifacts is how many of a job's artifacts are sent into the chat
	// with its answer (images as photos, other files as documents); the
	// rest stay available with /artifact. 0 means 3; negative means none.
	SendArtifacts int
	// SendArtifactBytes caps an artifact sent with the answer. 0 means
	// 10 MiB.
	SendArtifactBytes int64
	// MaxDownloadBytes caps a document a user sends (downloaded into the
	// chat's directory under ArtifactDir). 0 means MaxDownloadBytes (the
	// public Bot API's getFile limit, 20 MB).
	MaxDownloadBytes int64
	// ChatStorageBytes is each chat's storage quota: the bytes on disk
	// (allocated blocks, as du counts them) under <ArtifactDir>/<chat id>,
	// the files its jobs wrote and its uploads together. An upload that
	// would take the directory past it is refused before a byte is
	// written (by the size Telegram reports) and stopped and removed at
	// the quota while it is written (counted in bytes written, so a stored
	// file may take the directory past it by less than a file system
	// block). 0 means DefaultChatStorageBytes;
	// negative means no quota.
	ChatStorageBytes int64

	// GroupSession is the conversation a group member's message joins:
	// "user" (default) gives each member their own session inside the
	// group, "group" one session shared by the whole group.
	GroupSession string
	// AdminCommands are the commands (without "/") that only a group's
	// administrators may use in that group; private chats are unaffected.
	AdminCommands []string
	// Schedules, when set, serves /schedule, /remind, /tz and /jobs'
	// schedules (bot/schedule.go, docs/SCHEDULES.md); nil turns them off.
	Schedules *schedule.Service
	// Skills are the operator's Agent Skills offered as commands
	// (bot/skills.go): at most what fits Telegram's menu beside the
	// built-in commands, names not taken by them (skills.Set.Commands
	// with BuiltinCommands). nil ⇒ none.
	Skills []SkillCommand

	// Approvers are Telegram user ids who may answer every approval
	// prompt besides the user who asked for the job; each also gets the
	// prompt in their private chat with the bot (approvals_press.go).
	Approvers []int64

	// Keywords are words that address the bot in a group besides a
	// mention, a reply to the bot or a command (case-insensitive, whole
	// words).
	Keywords []string

	// Transcriber turns voice and audio messages into text (shown back to
	// the user, then run as the request). nil means voice messages get a
	// reply saying they cannot be transcribed here.
	Transcriber Transcriber

	// Speaker speaks answers for /voice (voiceout.go). nil means /voice
	// answers that spoken answers are not available on this bot.
	Speaker Speaker
	// Voice is the operator's default /voice mode: "off" (the default),
	// "on" or "mirror".
	Voice string

	// Compactor runs /compact (context.go). nil means /compact answers
	// that it is not available on this bot.
	Compactor Compactor

	// ContextWindow is the context window, in tokens, of a model ("" =
	// the workers' default), for /status's context gauge. nil or 0 shows
	// the tokens without the share.
	ContextWindow func(model string) int

	// Vision says whether photos go to the model as image input besides
	// being saved: "auto" (the default) sends them and, when the model
	// refuses images, runs the job without them; "true" sends them (a
	// refusal fails the job); "false" never. The worker reads the files
	// from the chat's directory (queue.Job.Images).
	Vision string

	// Stream is the operator's default streaming mode (chats change it
	// with /stream; chatcore.Stream): "progress" (one status message with
	// the steps and tool calls), "partial" (the answer as it is written:
	// with sendMessageDraft in private chats where the Bot API offers it,
	// in the status message otherwise) or "off" (the status line only).
	// "" and "auto" are "partial"; "edit" is "partial" that never uses
	// drafts. The formatted answer comes as a new message at the end.
	Stream string

	// GroupContext is how many group messages not addressed to the bot
	// each conversation keeps for its next addressed turn (groupctx.go).
	// 0 means DefaultGroupContext (50); negative means none.
	GroupContext int

	// AckReaction is the emoji the bot reacts with on a message whose job
	// it created (one of Telegram's reaction emoji, tgclient.ReactionEmoji).
	// "" means DefaultAckReaction (👀); "off" means no reaction.
	AckReaction string

	// Busy is the operator's default busy policy (issue 26): what a
	// message sent while the chat's job runs does, "queue" (the default:
	// it waits as a job of its own), "steer" (it joins the running job at
	// its next model boundary) or "interrupt" (the running job stops and
	// it runs next). Chats change it with /busy.
	Busy string

	// Models are the models users may choose per chat with /model (the
	// operator's list, ODEK_TELEGRAM_MODELS); the choice travels on each
	// job (queue.Job.Model) and workers honour it only when they allow the
	// model too. nil means no choice: /model says so.
	Models []string

	// PollTimeout is the long-poll wait of one getUpdates call. 0 means 30 s.
	PollTimeout time.Duration
	// StatusDelay is how long a job's first status message waits, so a
	// fast answer arrives without a "Starting…" flashing before it. 0
	// means 1 s; negative means none.
	StatusDelay time.Duration
	// ProgressInterval is how often running jobs' progress is read and how
	// often at most a chat's status message is edited. 0 means 1 s.
	ProgressInterval time.Duration
	// GlobalRate caps the bot's outgoing messages and edits per second
	// across all chats (Telegram allows about 30). 0 means 25.
	GlobalRate float64
	// RefusalInterval is how often at most one unauthorized user is told
	// they are not allowed. 0 means 1 h.
	RefusalInterval time.Duration

	// WebhookURL switches from long polling to a webhook: the public HTTPS
	// URL Telegram posts updates to. "" means long polling.
	WebhookURL string
	// WebhookListen is the address the webhook server listens on. "" means
	// ":8443".
	WebhookListen string
	// WebhookSecret is checked against the
	// X-Telegram-Bot-Api-Secret-Token header of every webhook request; it
	// is required with WebhookURL (1–256 of A-Z a-z 0-9 _ -).
	WebhookSecret string

	// State keeps chat state (sessions chosen with /new, today's usage,
	// artifact ids, unfinished jobs and their senders) across restarts.
	// nil means memory only: a restart forgets it.
	State StateStore
	// Ledger records the status messages on screen outside the process,
	// so one left behind by a crash is edited to say the job was
	// interrupted at the next start (see StatusLedger). nil means none.
	Ledger StatusLedger
	// StateInterval is how often at most State is saved. 0 means 2 s.
	StateInterval time.Duration
	// VolatileQueue says the queue does not outlive this process (embedded
	// mode's in-memory queue): unfinished jobs in the restored State are
	// gone with the old process, so they are dropped and their chats told
	// to send the request again. false (Redis) keeps them: a worker may
	// still finish them.
	VolatileQueue bool

	// Consumer names this front end in the results consumer group. ""
	// means "bot-<hostname>-<pid>".
	Consumer string
	// Logger receives structured logs. nil means logrus.StandardLogger().
	Logger logrus.FieldLogger
	// Now is the clock. nil means time.Now.
	Now func() time.Time
	// AfterSent, when set, is called after each step of a result's
	// delivery was accepted by Telegram and recorded (queue.SentRecorder),
	// with the steps recorded so far. Crash tests use it to stop the
	// process exactly there; nil in production.
	AfterSent func(jobID string, steps int)
}

// Errors of New. Match with errors.Is.
var (
	ErrNoToken      = errors.New("bot: TELEGRAM_BOT_TOKEN is empty")
	ErrNoAccessRule = errors.New("bot: no allowlist and no allow-all: set ODEK_TELEGRAM_ALLOWED_USERS or ODEK_TELEGRAM_ALLOWED_CHATS (or ODEK_TELEGRAM_ALLOW_ALL=true to open the bot to everyone)")
	ErrConfig       = errors.New("bot: invalid config")
	// ErrConflict reports a 409 from getUpdates: another process polls with
	// the same token, or a webhook is set.
	ErrConflict = errors.New("bot: Telegram answered 409 Conflict: another bot instance is polling with this token, or a webhook is set")
)

func (c Config) withDefaults() Config {
	if c.APIEndpoint == "" {
		c.APIEndpoint = DefaultAPIEndpoint
	} else if !strings.Contains(c.APIEndpoint, "%s") {
		c.APIEndpoint = strings.TrimRight(c.APIEndpoint, "/") + "/bot%s/%s"
	}
	if c.UserJobsPerMinute == 0 {
		c.UserJobsPerMinute = 6
	}
	if c.AgentTimeout <= 0 {
		c.AgentTimeout = 900 * time.Second
	}
	if c.MaxUploadBytes <= 0 {
		c.MaxUploadBytes = MaxUploadBytes
	}
	if c.SendArtifacts == 0 {
		c.SendArtifacts = 3
	}
	if c.SendArtifactBytes <= 0 {
		c.SendArtifactBytes = 10 << 20
	}
	c.SendArtifactBytes = min(c.SendArtifactBytes, c.MaxUploadBytes)
	if c.MaxDownloadBytes <= 0 {
		c.MaxDownloadBytes = MaxDownloadBytes
	}
	if c.ChatStorageBytes == 0 {
		c.ChatStorageBytes = DefaultChatStorageBytes
	}
	if c.GroupSession == "" {
		c.GroupSession = "user"
	}
	if c.PollTimeout <= 0 {
		c.PollTimeout = 30 * time.Second
	}
	if c.StatusDelay == 0 {
		c.StatusDelay = time.Second
	}
	if c.ProgressInterval <= 0 {
		c.ProgressInterval = time.Second
	}
	if c.GlobalRate <= 0 {
		c.GlobalRate = 25
	}
	if c.RefusalInterval <= 0 {
		c.RefusalInterval = time.Hour
	}
	if c.StateInterval <= 0 {
		c.StateInterval = 2 * time.Second
	}
	if c.WebhookListen == "" {
		c.WebhookListen = ":8443"
	}
	if c.Logger == nil {
		c.Logger = logrus.StandardLogger()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports what New would reject: no token, no access rule, a
// webhook without a valid secret. It makes no network calls.
func (c Config) Validate() error { return c.validate() }

// validate checks what the zero value cannot default.
func (c Config) validate() error {
	if c.Token == "" {
		return ErrNoToken
	}
	switch c.Vision {
	case "", "auto", "true", "false":
	default:
		return fmt.Errorf("%w: vision must be true, false or auto, got %q", ErrConfig, clipStr(c.Vision, 20))
	}
	if _, err := chatcore.ParseStream(c.Stream); err != nil {
		return fmt.Errorf("%w: ODEK_TELEGRAM_STREAM: %v (or auto, edit)", ErrConfig, err)
	}
	if c.AckReaction != "" && c.AckReaction != "off" && !slices.Contains(tgclient.ReactionEmoji, c.AckReaction) {
		return fmt.Errorf("%w: ODEK_TELEGRAM_ACK_REACTION %q is not one of Telegram's reaction emoji (or off)", ErrConfig, clipStr(c.AckReaction, 20))
	}
	if _, ok := parseVoiceMode(c.Voice); !ok {
		return fmt.Errorf("%w: ODEK_TELEGRAM_VOICE must be off, on or mirror, got %q", ErrConfig, clipStr(c.Voice, 20))
	}
	if _, err := chatcore.ParseBusy(c.Busy); err != nil {
		return fmt.Errorf("%w: ODEK_TELEGRAM_BUSY: %v", ErrConfig, err)
	}
	if c.GroupSession != "" && c.GroupSession != "user" && c.GroupSession != "group" {
		return fmt.Errorf("%w: ODEK_TELEGRAM_GROUP_SESSION must be user or group, got %q", ErrConfig, c.GroupSession)
	}
	if !validToken(c.Token) {
		// The token goes into the Bot API URL path; a stray character
		// (a CRLF .env file) would fail every request with an error that
		// quotes the URL. The token itself is never echoed.
		return fmt.Errorf("%w: TELEGRAM_BOT_TOKEN may hold only A-Z a-z 0-9 : _ - (got %d characters, some outside that set)", ErrConfig, len(c.Token))
	}
	if !c.AllowAll && len(c.AllowedUsers) == 0 && len(c.AllowedChats) == 0 {
		return ErrNoAccessRule
	}
	if c.WebhookURL != "" {
		if !strings.HasPrefix(c.WebhookURL, "https://") && !strings.HasPrefix(c.WebhookURL, "http://") {
			return fmt.Errorf("%w: ODEK_TELEGRAM_WEBHOOK_URL must be an http(s) URL", ErrConfig)
		}
		if !validSecret(c.WebhookSecret) {
			return fmt.Errorf("%w: ODEK_TELEGRAM_WEBHOOK_SECRET must be 1-256 characters of A-Z a-z 0-9 _ - (got %d characters)", ErrConfig, len(c.WebhookSecret))
		}
	}
	if c.DailyTokenBudget < 0 {
		return fmt.Errorf("%w: daily token budget is %d, must be ≥ 0", ErrConfig, c.DailyTokenBudget)
	}
	return nil
}

// validToken reports whether a bot token holds only the characters
// BotFather's tokens use ("123456:AAE..."). Pure.
func validToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ':' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func validSecret(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Access is the authorization rule: who may use the bot.
type Access struct {
	Users map[int64]bool
	Chats map[int64]bool
	All   bool
}

// NewAccess builds an Access from the config lists.
func NewAccess(users, chats []int64, all bool) Access {
	a := Access{Users: map[int64]bool{}, Chats: map[int64]bool{}, All: all}
	for _, u := range users {
		a.Users[u] = true
	}
	for _, c := range chats {
		a.Chats[c] = true
	}
	return a
}

// Allows reports whether user may use the bot in chat: everyone when All,
// else a listed user anywhere, or anyone in a listed chat. A zero user id
// (an update without a sender, e.g. a channel post) is allowed only by a
// listed chat or All. Pure.
func (a Access) Allows(userID, chatID int64) bool {
	switch {
	case a.All:
		return true
	case userID != 0 && a.Users[userID]:
		return true
	default:
		return a.Chats[chatID]
	}
}

// ParseIDs parses a comma-separated list of Telegram ids ("123, -100456").
// Empty items are skipped; anything else that is not an integer is an
// error naming it.
func ParseIDs(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: %q is not a Telegram id (an integer)", ErrConfig, clipStr(f, 32))
		}
		out = append(out, id)
	}
	return out, nil
}

func clipStr(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
