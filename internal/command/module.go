package command

// moduleCommands is MODULE. HotKV loads no Redis modules (they are shared objects built against
// Redis's C API), but tools and client libraries call MODULE LIST to see which are loaded, so
// the command answers as a Redis with none: an empty list, and for LOAD, LOADEX and UNLOAD
// Redis's refusal (enable-module-command, as Redis's protected commands) or, where allowed,
// Redis's errors for a module that cannot be loaded or is not there.
func moduleCommands() []*Command {
	acl := []string{"admin", "slow", "dangerous"}
	sub := func(name string, arity int, flags Flag, syntax, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, ACL: acl, Since: "4.0.0",
			Complexity: "O(1)", Syntax: syntax, Summary: summary, Handler: h}
	}
	protected := FlagAdmin | FlagNoScript | FlagNoAsyncLoading
	list := sub("list", 2, FlagAdmin|FlagNoScript, "", "List all modules loaded by the server", func(c *Ctx) { c.W.Array(0) })
	list.Complexity = "O(N) where N is the number of loaded modules."
	list.Tips = []string{"nondeterministic_output_order"}
	load := sub("load", -3, protected, "path [arg [arg ...]]", "Load a module", moduleLoadCommand)
	loadex := sub("loadex", -3, protected, "path [CONFIGS name value [name value ...]] [ARGS args [args ...]]",
		"Load a module with extended parameters", moduleLoadCommand)
	loadex.Since = "7.0.0"
	unload := sub("unload", 3, protected, "name", "Unload a module", func(c *Ctx) {
		if moduleAllowed(c) {
			c.Error("ERR Error unloading module: no such module with that name")
		}
	})
	help := sub("help", 2, FlagLoading|FlagStale, "", "Show helpful text about the different subcommands", helpHandler(
		"MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"LIST",
		"    Return a list of loaded modules.",
		"LOAD <path> [<arg> ...]",
		"    Load a module library from <path>, passing to it any optional arguments.",
		"LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
		"    Load a module library from <path>, while passing it module configurations and optional arguments.",
		"UNLOAD <name>",
		"    Unload a module.",
		"HELP",
		"    Prints this help."))
	help.Since, help.ACL = "5.0.0", []string{"slow"}
	return []*Command{{Name: "module", Arity: -2, ACL: []string{"slow"}, Group: "server", Since: "4.0.0",
		Complexity: "Depends on subcommand.", Summary: "A container for module commands",
		Doc: "HotKV loads no Redis modules: `MODULE LIST` is always empty, and `LOAD`, `LOADEX` and `UNLOAD` fail as in a Redis where the module cannot be loaded or is not loaded " +
			"(after `enable-module-command`'s check, which refuses them by default as Redis does). Rate limiting, the reason for redis-cell, is built in (`CL.THROTTLE`).",
		Subcommands: []*Command{help, list, load, loadex, unload}}}
}

// moduleAllowed applies enable-module-command to MODULE LOAD, LOADEX and UNLOAD (Redis's
// protected commands), replying the refusal itself.
func moduleAllowed(c *Ctx) bool {
	if protectedAllowed(c, "enable-module-command") {
		return true
	}
	c.Error("ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, " +
		"otherwise you need to set this option in the configuration file, and then restart the server.")
	return false
}

// moduleLoadCommand is MODULE LOAD and LOADEX: where allowed, Redis's answer for a module
// that cannot be loaded.
func moduleLoadCommand(c *Ctx) {
	if moduleAllowed(c) {
		c.Error("ERR Error loading the extension. Please check the server logs.")
	}
}
