package command

// Scripting (EVAL, FUNCTION) arrives with Lua (the transactions and scripting issue). Until
// then the server has no functions, and FUNCTION FLUSH, which deletes them all, does exactly
// what it says: nothing is left. Clients and test suites (Redis's own runs it before every
// block of tests) call it to reset a server.

func scriptingCommands() []*Command {
	return []*Command{
		{Name: "function", Arity: -2, ACL: []string{"slow"}, Group: "scripting", Since: "7.0.0",
			Complexity: "Depends on subcommand.", Summary: "A container for function commands",
			Subcommands: []*Command{
				{Name: "flush", Arity: -2, Flags: FlagWrite | FlagNoScript, ACL: []string{"write", "slow", "scripting"},
					Group: "scripting", Since: "7.0.0", Syntax: "[ASYNC | SYNC]",
					Complexity: "O(N) where N is the number of functions deleted", Summary: "Deleting all functions",
					Tips:    []string{"request_policy:all_shards", "response_policy:all_succeeded"},
					Doc:     "HotKV has no functions until scripting lands, so there is never anything to delete; the reply and the errors are Redis's.",
					Handler: functionFlushCommand},
				{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, ACL: []string{"slow", "scripting"},
					Group: "scripting", Since: "7.0.0", Complexity: "O(1)", Summary: "Show helpful text about the different subcommands",
					Handler: helpHandler(
						"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
						"FLUSH [ASYNC|SYNC]",
						"    Delete all the libraries.",
						"    When called without the optional mode argument, the behavior is determined by the",
						"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
						"    * ASYNC: Asynchronously flush the libraries.",
						"    * SYNC: Synchronously flush the libraries.",
						"HELP",
						"    Prints this help.",
					)},
			}},
	}
}

func functionFlushCommand(c *Ctx) {
	switch {
	case len(c.Args) > 3:
		c.Error("ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.")
		return
	case len(c.Args) == 3 && !c.ArgIs(2, "async") && !c.ArgIs(2, "sync"):
		c.Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		return
	}
	c.W.OK()
}
