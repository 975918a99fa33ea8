package config

// BotEnv is everything odek-bot reads from the environment: its Telegram
// surface and SharedEnv (embedded mode also reads the first two groups of
// EnvGroups). odek-bot --help renders it; the compose test checks
// docker-compose.yml against its tags.
type BotEnv struct {
	SharedEnv
	Token        string `env:"TELEGRAM_BOT_TOKEN" env-description:"bot token from @BotFather (required; never logged)"`
	APIEndpoint  string `env:"TELEGRAM_API_ENDPOINT" env-description:"Bot API root, e.g. http://telegram-bot-api:8081 for a self-hosted server (default https://api.telegram.org)"`
	AllowedUsers string `env:"ODEK_TELEGRAM_ALLOWED_USERS" env-description:"comma-separated Telegram user ids allowed to use the bot"`
	AllowedChats string `env:"ODEK_TELEGRAM_ALLOWED_CHATS" env-description:"comma-separated chat ids (groups are negative) whose members may use the bot"`
	AllowAll     bool   `env:"ODEK_TELEGRAM_ALLOW_ALL" env-description:"true opens the bot to everyone (logged as a warning); without it and without an allowlist the bot refuses to start"`
	DailyBudget  int64  `env:"ODEK_TELEGRAM_DAILY_TOKEN_BUDGET" env-description:"tokens each chat may use per UTC day; warns at 80 %, refuses when spent (0 = no budget)"`
	UserBudget   string `env:"ODEK_TELEGRAM_USER_BUDGET" env-description:"caps every user gets, shared by all the bots and workers on one queue: day_tokens=N,month_tokens=N,day_usd=X,month_usd=X (any of them; empty = none; USD needs the workers' prices)"`
	UserBudgets  string `env:"ODEK_TELEGRAM_USER_BUDGETS" env-description:"per-user overrides of ODEK_TELEGRAM_USER_BUDGET: <user id>:<caps>;<user id>:<caps>, e.g. 1001:day_tokens=1000000;1002:day_usd=none"`
	GuestBudget  string `env:"ODEK_TELEGRAM_GUEST_BUDGET" env-description:"opt-in: group members not on the allowlist may use the bot in groups, all drawing on this one shared pool (caps as in ODEK_TELEGRAM_USER_BUDGET; empty = they are refused)"`
	JobBudget    string `env:"ODEK_TELEGRAM_JOB_BUDGET" env-description:"the most one job may spend, and so reserve of the chat's and the user's budgets: tokens=N,usd=X (empty = a job may take all that is left, so a user's second job waits for the first)"`
	Admins       string `env:"ODEK_TELEGRAM_ADMINS" env-description:"comma-separated user ids who may see every user's usage with /usage all (in a private chat with the bot)"`
	UserRate     int    `env:"ODEK_TELEGRAM_USER_JOBS_PER_MINUTE" env-default:"6" env-description:"new jobs one user may start per minute (negative = no limit)"`
	AgentTimeout int    `env:"ODEK_TELEGRAM_AGENT_TIMEOUT" env-default:"900" env-description:"seconds a job may run before the bot cancels it"`
	WebhookURL   string `env:"ODEK_TELEGRAM_WEBHOOK_URL" env-description:"public HTTPS URL for updates; empty = long polling"`
	WebhookAddr  string `env:"ODEK_TELEGRAM_WEBHOOK_LISTEN" env-default:":8443" env-description:"address the webhook server listens on"`
	WebhookKey   string `env:"ODEK_TELEGRAM_WEBHOOK_SECRET" env-description:"secret checked in the X-Telegram-Bot-Api-Secret-Token header (required with a webhook)"`
	HealthAddr   string `env:"ODEK_HEALTH_ADDR" env-description:"serve GET /healthz on this address, e.g. :8080 (empty = off)"`
	Workers      int    `env:"ODEK_WORKERS" env-default:"2" env-description:"embedded mode: jobs run at once inside the bot"`
	StateFile    string `env:"ODEK_TELEGRAM_STATE_FILE" env-description:"file keeping chat state (sessions, today's usage, artifact ids, unfinished jobs) across restarts (empty = memory only)"`
	GroupSession string `env:"ODEK_TELEGRAM_GROUP_SESSION" env-default:"user" env-description:"groups: user = one conversation per member (default), group = one shared by the whole group"`
	AdminCmds    string `env:"ODEK_TELEGRAM_ADMIN_COMMANDS" env-description:"comma-separated commands (e.g. new,stop) only a group's admins may use in that group"`
	Keywords     string `env:"ODEK_TELEGRAM_KEYWORDS" env-description:"comma-separated words that address the bot in a group besides a mention, a reply to it or a command"`
	SendFiles    int    `env:"ODEK_TELEGRAM_SEND_ARTIFACTS" env-default:"3" env-description:"how many of a job's files are sent into the chat with its answer (images as photos); the rest stay available with /artifact (negative = none)"`
	MaxFileBytes int64  `env:"ODEK_TELEGRAM_MAX_FILE_BYTES" env-default:"20971520" env-description:"largest document a user may send, in bytes (Telegram lets bots download up to 20 MB)"`
	ChatStorage  int64  `env:"ODEK_TELEGRAM_CHAT_STORAGE_BYTES" env-default:"1073741824" env-description:"each chat's storage quota in bytes: what its directory under ODEK_ARTIFACTS_DIR may hold on disk; an upload that would go past it is refused before it is written (negative = no quota)"`
	Vision       string `env:"ODEK_TELEGRAM_VISION" env-default:"auto" env-description:"photos as image input to the model: auto = send them, and run without them if the model refuses images; true = send them; false = never (they are saved as files either way)"`
	Stream       string `env:"ODEK_TELEGRAM_STREAM" env-default:"partial" env-description:"what a chat shows while a job runs (chats change it with /stream): progress = one status message with the steps and tool calls; partial = the answer as it is written (sendMessageDraft in private chats where the Bot API offers it, else the status message; auto is the same, edit never uses drafts); off = a short status line only"`
	GroupCtx     int    `env:"ODEK_TELEGRAM_GROUP_CONTEXT" env-default:"50" env-description:"groups: how many recent messages not addressed to the bot each conversation keeps and gives its next addressed turn as quoted context (needs the bot's privacy mode off; negative = none)"`
	AckReaction  string `env:"ODEK_TELEGRAM_ACK_REACTION" env-default:"👀" env-description:"the reaction set on a message when its job is created (one of Telegram's reaction emoji; off = none)"`
	Busy         string `env:"ODEK_TELEGRAM_BUSY" env-default:"queue" env-description:"what a message sent while the chat's job runs does (chats change it with /busy): queue = it waits and runs as its own job; steer = it joins the running job at its next model call and the answer covers it; interrupt = the running job stops (its work so far is kept in the conversation) and the new message runs"`
	STTModel     string `env:"ODEK_TELEGRAM_TRANSCRIBE_MODEL" env-default:"whisper-1" env-description:"model that transcribes voice and audio messages at the endpoint's /audio/transcriptions (off = voice messages are declined)"`
	STTURL       string `env:"ODEK_TELEGRAM_TRANSCRIBE_URL" env-description:"OpenAI-compatible API root for transcription, e.g. https://api.openai.com/v1 (empty = the configured model endpoint, with its API key)"`
	STTKey       string `env:"ODEK_TELEGRAM_TRANSCRIBE_API_KEY" env-description:"API key for ODEK_TELEGRAM_TRANSCRIBE_URL (the model endpoint's key is sent only to the model endpoint's own host; never logged)"`
	TTSModel     string `env:"ODEK_TELEGRAM_SPEECH_MODEL" env-default:"gpt-4o-mini-tts" env-description:"model that speaks answers for /voice at the endpoint's /audio/speech (off = /voice is not offered)"`
	TTSVoice     string `env:"ODEK_TELEGRAM_SPEECH_VOICE" env-default:"alloy" env-description:"voice of spoken answers (the endpoint's voice name, e.g. alloy)"`
	TTSURL       string `env:"ODEK_TELEGRAM_SPEECH_URL" env-description:"OpenAI-compatible API root for spoken answers (empty = ODEK_TELEGRAM_TRANSCRIBE_URL if set, else the configured model endpoint with its API key)"`
	TTSKey       string `env:"ODEK_TELEGRAM_SPEECH_API_KEY" env-description:"API key for ODEK_TELEGRAM_SPEECH_URL (empty = the transcription key for the transcription host, the model endpoint's key for its own host only; never logged)"`
	Voice        string `env:"ODEK_TELEGRAM_VOICE" env-default:"off" env-description:"default /voice mode of every chat: off, on (every answer is also spoken) or mirror (answers to voice messages are spoken)"`
	Approvers    string `env:"ODEK_TELEGRAM_APPROVERS" env-description:"comma-separated Telegram user ids who may answer any approval prompt besides the asking user; each also gets the prompt in a private chat with the bot"`
	StatusLedger string `env:"ODEK_TELEGRAM_STATUS_LEDGER" env-description:"where the bot notes its status messages so one left by a crash is marked interrupted at the next start: empty = in Redis (distributed) or $ODEK_HOME/telegram-status (embedded), a directory, or off"`

	// ResultLease: distributed mode only (the embedded store hands a
	// restarted bot its unfinished deliveries at once).
	ResultLease Seconds `env:"ODEK_QUEUE_RESULT_LEASE" env-default:"30s" env-description:"distributed mode: how long an answer a bot read but did not finish delivering (it stopped) waits before a bot takes it over; the delivery resumes after the chunks Telegram already accepted"`
}
