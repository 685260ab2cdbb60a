package hotkv

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Processor is what the rate-limit commands need to run: the one method every go-redis
// executor has. *redis.Client, *redis.ClusterClient, *redis.Ring, redis.Pipeliner (from
// Pipeline, Pipelined, TxPipeline, TxPipelined), *redis.Tx, *redis.Conn and
// redis.UniversalClient all satisfy it, which is what lets one set of typed commands work on
// all of them.
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// Commands holds the typed HotKV rate-limit commands and runs them on a [Processor]. It is a
// small value (one interface), so creating one per pipeline with [Wrap] costs nothing.
//
// The zero value has no processor and panics when used; obtain one from [Wrap], or use the
// Commands embedded in [Client] and [ClusterClient].
type Commands struct {
	p Processor
}

// Wrap returns the typed rate-limit commands running on p. Use it to add the commands to a
// go-redis client you already have, or inside a pipeline or transaction:
//
//	cmds, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
//		res = hotkv.Wrap(pipe).GCRALimit(ctx, "rl:user:42", time.Minute, 10, 1)
//		return nil
//	})
func Wrap(p Processor) Commands {
	return Commands{p: p}
}

// process runs cmd and makes sure any error ends up on the command itself: go-redis executors
// already do this, but a hook or a custom Processor might only return it, and callers read
// errors from the command (Result, Err), as with go-redis's own methods.
func (c Commands) process(ctx context.Context, cmd redis.Cmder) {
	if err := c.p.Process(ctx, cmd); err != nil && cmd.Err() == nil {
		cmd.SetErr(err)
	}
}

// Client is a go-redis client with the HotKV rate-limit commands added. Every go-redis method
// (Get, Set, Pipelined, TxPipelined, Close, ...) is available through the embedded
// *redis.Client; the rate-limit methods come from the embedded [Commands].
type Client struct {
	*redis.Client
	Commands
}

// NewClient connects to a HotKV server with the usual go-redis options (address, password,
// TLS, pool sizes, Protocol 2 or 3, ...). Like redis.NewClient it does not dial until the
// first command.
func NewClient(opt *redis.Options) *Client {
	rdb := redis.NewClient(opt)
	return &Client{Client: rdb, Commands: Wrap(rdb)}
}

// ClusterClient is a go-redis cluster client with the HotKV rate-limit commands added. The
// commands set their key position explicitly, so each is routed by its key (GCRA.*,
// CL.THROTTLE) or limiter name (RATELIMIT.*) without depending on COMMAND metadata.
type ClusterClient struct {
	*redis.ClusterClient
	Commands
}

// NewClusterClient connects to a HotKV cluster with the usual go-redis cluster options.
func NewClusterClient(opt *redis.ClusterOptions) *ClusterClient {
	rdb := redis.NewClusterClient(opt)
	return &ClusterClient{ClusterClient: rdb, Commands: Wrap(rdb)}
}
