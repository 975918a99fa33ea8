// Command odek-bot is the Telegram front end of odek. It is not built yet:
// the bot lands with its own issue; until then this main says so and exits
// non-zero so no deployment mistakes it for a working bot.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "odek-bot: the Telegram front end is not built yet; use `odek run` meanwhile")
	os.Exit(3)
}
