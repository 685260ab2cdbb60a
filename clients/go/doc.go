// Package hotkv is the Go client for HotKV's rate-limiting commands.
//
// HotKV speaks the Redis protocol, so this package does not reimplement a client: it adds typed
// commands for GCRA.LIMIT, GCRA.PEEK, GCRA.RESET, CL.THROTTLE and RATELIMIT.* on top of
// go-redis v9. Users keep everything go-redis offers (connection pooling, TLS, cluster,
// sentinel, retries, pipelines, transactions and hooks) and gain result structs with named
// fields instead of five-integer arrays whose polarity differs between commands.
//
// There are two ways in:
//
//   - [NewClient] and [NewClusterClient] return a go-redis client with the rate-limit methods
//     added, for new code.
//   - [Wrap] adds the same methods to anything that can process a go-redis command: a client
//     you already have, a [redis.Pipeliner] from Pipelined or TxPipelined, a [redis.Tx], a
//     [redis.Conn] or a ring.
//
// Every method returns a command object whose Result, Val and Err behave like go-redis's own
// commands. Inside a pipeline the reply is available after Exec (or when Pipelined returns),
// exactly as for go-redis commands. Server errors are returned unchanged, with the server's
// exact text (for example "ERR invalid burst: must be a positive integer").
//
// # Durations
//
// Periods and windows are [time.Duration] values sent as whole milliseconds (seconds for
// CL.THROTTLE), truncated toward zero like [time.Duration.Milliseconds]. The client does not
// validate them: a duration that truncates to 0 or below reaches the server as such and is
// answered with the server's usual error, so the rules live in one place.
//
// # Replies
//
// The replies are parsed from both RESP2 and RESP3 (choose with redis.Options.Protocol). The
// five-integer replies are identical in both; RATELIMIT.STATS is a flat array in RESP2 and a
// map in RESP3, and its rate is a bulk string in RESP2 and a double in RESP3.
//
// The semantics of every command, reply field and error are those of the HotKV rate-limiting
// specification; the README of this module summarises them.
package hotkv
