package bot

// inspect runs fn in the chat's actor and waits for it: how tests look at
// a chat's state without racing its owner.
func (b *Bot) inspect(chatID int64, fn func(c *chat)) {
	done := make(chan struct{})
	b.serial.Do(chatKey(chatID), func(c *chat) {
		defer close(done)
		fn(c)
	})
	<-done
}
