// Package chatcore is the Telegram-free core of odek's chat front end: it
// decides, the shell (package bot) does. Given what the shell parsed out
// of an update, the chat's books and the operator's Policy, it decides
//
//   - message in → route (RouteOf): a job, a command, a reply, or nothing;
//   - a request → its budget decision (Books.Request, Admit): the job's
//     token cap and what it reserves of the chat's day, a wait behind the
//     chat's unfinished jobs (BudgetHeld), or a refusal; Books is the
//     chat's usage, reservations and context gauge as a state machine;
//   - job progress → status (Status.Apply, Status.TextIn) and how full the
//     conversation is (ContextInfo, Gauge);
//   - result → reply plan (PlanResult): the notice, the answer, the
//     artifacts with their chat ids, the day's books after it and the 80 %
//     warning;
//
// and holds the built-in texts in English and German (Tr) and the usage
// arithmetic (Usage, DayTotal, AppendHistory). It imports no Bot API type
// and does no I/O (an import rule in internal/archtest keeps it so);
// everything here is a pure function or a value type, safe for
// concurrent use, tested by tables.
package chatcore
