package command

import "strings"

// RLSAdmin is the server's Envoy rate limit service as the RLS command sees it
// (docs/envoy.md).
type RLSAdmin interface {
	// ReloadRLS reads rls-config again and installs it; on an error the configuration in use
	// stays and the error names the file, the line and the problem.
	ReloadRLS(path string) error
	// RLSStatus describes the service: whether it runs, its configuration file, domains and
	// rules, and how many decisions it relayed to other nodes (rls-forward).
	RLSStatus() [][2]string
}

// rlsCommands is RLS, a HotKV-only container for the built-in Envoy rate limit service. RELOAD
// is admin (it changes what every Envoy is limited by); STATUS reads only.
func rlsCommands() []*Command {
	help := &Command{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, ACL: []string{"slow"}, Since: "0.1.0",
		Complexity: "O(1)", Summary: "Shows helpful text about the different subcommands", Handler: helpHandler(
			"RLS <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"RELOAD",
			"    Read rls-config again and use it; a file with an error is refused and the old configuration kept.",
			"STATUS",
			"    Return whether the Envoy rate limit service runs, its configuration file, domains, rules and forwarding counts.",
			"HELP",
			"    Prints this help.")}
	return []*Command{{Name: "rls", Arity: -2, ACL: []string{"slow"}, Group: "ratelimit", Since: "0.1.0",
		Complexity: "Depends on subcommand.", Summary: "A container for Envoy rate limit service commands",
		Doc: "HotKV only. Manages the built-in Envoy rate limit service of a server started with `rls-port` (docs/envoy.md).",
		Subcommands: []*Command{
			help,
			{Name: "reload", Arity: 2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: []string{"admin", "slow", "dangerous"},
				Since: "0.1.0", Complexity: "O(N) where N is the size of the configuration", Summary: "Reloads the Envoy rate limit service's descriptor configuration",
				Handler: rlsReloadCommand},
			{Name: "status", Arity: 2, Flags: FlagLoading | FlagStale, ACL: []string{"slow"},
				Since: "0.1.0", Complexity: "O(1)", Summary: "Describes the Envoy rate limit service and its configuration",
				Doc:     "Fields: `enabled`, `config`, `listeners`, `domains`, `rules`; `serving` (`yes`, or `no:` and why: what the gRPC health service on the same port reports, docs/envoy.md); and for forwarding `forward` (rls-forward), `forwarded` (relays to other nodes answered) and `forward_errors` (relays that failed: their calls were answered UNAVAILABLE).",
				Handler: rlsStatusCommand},
		}}}
}

func rlsAdmin(c *Ctx) RLSAdmin {
	ra, ok := c.Srv.(RLSAdmin)
	if !ok {
		c.Error("ERR this server has no rate limit service")
		return nil
	}
	return ra
}

func rlsReloadCommand(c *Ctx) {
	if ra := rlsAdmin(c); ra != nil {
		if err := ra.ReloadRLS(""); err != nil {
			c.Error("ERR " + strings.ReplaceAll(err.Error(), "\n", " "))
			return
		}
		c.W.OK()
	}
}

func rlsStatusCommand(c *Ctx) {
	if ra := rlsAdmin(c); ra != nil {
		st := ra.RLSStatus()
		c.W.Map(len(st))
		for _, kv := range st {
			c.W.BulkString(kv[0])
			c.W.BulkString(kv[1])
		}
	}
}
