package rls

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlpb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Executor runs commands through the server's command path, as one client would.
type Executor interface {
	// NowMs is the server's command clock (DEBUG CLOCK moves it).
	NowMs() int64
	// Do runs cmds in order on one internal client at the command time now and returns each
	// raw RESP2 reply. err is ErrUnavailable (wrapped) when this node cannot decide: a Raft
	// follower, a shard that does not own a key, a server shutting down, a leadership lost
	// before the decision committed.
	Do(now int64, cmds ...[][]byte) ([][]byte, error)
}

// ErrUnavailable marks an Executor error that Envoy should treat as the service being down
// (gRPC UNAVAILABLE), so that its failure_mode_deny decides.
var ErrUnavailable = errors.New("rate limit service unavailable on this node")

// Service implements envoy.service.ratelimit.v3.RateLimitService over an Executor.
type Service struct {
	rlpb.UnimplementedRateLimitServiceServer
	exec Executor
	cfg  atomic.Pointer[Config]
	// Headers turns on the x-ratelimit-* response headers (rls-response-headers).
	Headers atomic.Bool
	stats   statsTable
}

// NewService returns a service with no configuration: every descriptor is answered OK, as
// envoyproxy/ratelimit answers an unknown domain, until Install succeeds.
func NewService(exec Executor) *Service {
	s := &Service{exec: exec}
	s.Headers.Store(true)
	s.cfg.Store(&Config{domains: map[string]*node{}})
	return s
}

// Config returns the configuration in use.
func (s *Service) Config() *Config { return s.cfg.Load() }

// Install makes c the configuration in use. Requests in flight finish with the one they
// started with. The named limiters of sliding-window rules are created (or updated, keeping
// their state) by the first request that uses each rule under c (syncLimiter), not here:
// Install runs inside CONFIG SET and RLS RELOAD, and a command must not run commands.
func (s *Service) Install(c *Config) error {
	s.cfg.Store(c)
	return nil
}

// syncLimiter creates the rule's limiter, or updates an existing one to the rule's limit and
// window (RATELIMIT.UPDATE keeps its state), once per loaded configuration.
func (s *Service) syncLimiter(now int64, r *Rule) error {
	name := []byte(r.LimiterName())
	limit := []byte(strconv.FormatUint(uint64(r.RequestsPerUnit), 10))
	window := []byte(strconv.FormatInt(r.PeriodMs(), 10))
	replies, err := s.exec.Do(now, [][]byte{[]byte("RATELIMIT.CREATE"), name, limit, window, []byte("ALGO"), []byte("sliding_window")})
	if err == nil && isError(replies[0]) {
		replies, err = s.exec.Do(now, [][]byte{[]byte("RATELIMIT.UPDATE"), name, []byte("LIMIT"), limit, []byte("WINDOW"), window})
	}
	if err != nil {
		return err
	}
	if isError(replies[0]) {
		return fmt.Errorf("cannot create the sliding-window limiter %s: %s", r.LimiterName(), errorText(replies[0]))
	}
	r.synced.Store(true)
	return nil
}

// decision is one descriptor's evaluation.
type decision struct {
	rule    *Rule
	statKey string
	hits    uint64
	// refund is Envoy's is_negative_hits: the hits are given back (GCRA.REFUND); the other
	// algorithms keep no refundable state, and such a descriptor is answered OK uncharged.
	refund   bool
	cmdIndex int // first reply of this descriptor in the batch, -1 for none
	cmds     int
	window   int64 // fixed window end, unix seconds
}

// ShouldRateLimit decides a request: each descriptor is matched against the configuration,
// charged with its command, and answered; the overall code is OVER_LIMIT if any descriptor is
// over its limit (shadow-mode rules never are).
func (s *Service) ShouldRateLimit(_ context.Context, req *rlpb.RateLimitRequest) (*rlpb.RateLimitResponse, error) {
	if req.GetDomain() == "" {
		return nil, status.Error(codes.InvalidArgument, "rate limit domain must not be empty")
	}
	if len(req.GetDescriptors()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "rate limit descriptor list must not be empty")
	}
	cfg := s.cfg.Load()
	now := s.exec.NowMs()
	ds := make([]decision, len(req.Descriptors))
	var entries []Entry
	replacing := map[string]bool{}
	for i, d := range req.Descriptors {
		dec := &ds[i]
		dec.cmdIndex = -1
		dec.hits = uint64(req.HitsAddend)
		if h := d.GetHitsAddend(); h != nil {
			dec.hits = h.GetValue()
		}
		if dec.hits == 0 {
			dec.hits = 1
		}
		// The commands take counts up to 2^63-1; more could never pass anyway.
		dec.hits = min(dec.hits, math.MaxInt64)
		dec.refund = d.GetIsNegativeHits()
		entries = entries[:0]
		for _, e := range d.GetEntries() {
			entries = append(entries, Entry{Key: e.GetKey(), Value: e.GetValue()})
		}
		if o := d.GetLimit(); o != nil {
			if _, known := cfg.domains[req.Domain]; known {
				dec.rule = overrideRule(req.Domain, entries, o.GetRequestsPerUnit(), Unit(o.GetUnit()))
				dec.statKey = dec.rule.Path
			}
		} else if m, ok := cfg.Match(req.Domain, entries); ok {
			dec.rule, dec.statKey = m.Rule, m.StatKey
		}
		if dec.rule != nil {
			for _, r := range dec.rule.Replaces {
				replacing[r] = true
			}
		}
	}
	// A rule named in another matched rule's replaces is not applied (envoyproxy/ratelimit).
	var cmds [][][]byte
	for i := range ds {
		dec := &ds[i]
		if dec.rule == nil || dec.rule.Unlimited {
			continue
		}
		if dec.rule.Name != "" && replacing[dec.rule.Name] {
			dec.rule = nil
			continue
		}
		if dec.rule.RequestsPerUnit == 0 {
			continue // denies everything, no state (evaluate)
		}
		if dec.refund && dec.rule.Algorithm != GCRA {
			continue
		}
		dec.cmdIndex = len(cmds)
		ek := entriesKey(req.Descriptors[i].GetEntries())
		key := append([]byte("rls:"+escape(req.Domain)+":"), ek...)
		hits := []byte(strconv.FormatUint(dec.hits, 10))
		r := dec.rule
		switch r.Algorithm {
		case GCRA:
			name := "GCRA.LIMIT"
			if dec.refund {
				name = "GCRA.REFUND"
			}
			cmds = append(cmds, [][]byte{[]byte(name), key, []byte(strconv.FormatInt(r.GCRAPeriodMs, 10)),
				[]byte(strconv.FormatInt(r.Burst, 10)), hits})
			dec.cmds = 1
		case SlidingWindow:
			if !r.synced.Load() {
				if err := s.syncLimiter(now, r); err != nil {
					return nil, grpcError(err)
				}
			}
			cmds = append(cmds, [][]byte{[]byte("RATELIMIT.CHECK"), []byte(r.LimiterName()), ek,
				[]byte("COST"), hits})
			dec.cmds = 1
		case FixedWindow:
			unit := r.Unit.Seconds()
			start := now / 1000 / unit * unit
			dec.window = start + unit
			wkey := append(append(key, ':'), strconv.FormatInt(start, 10)...)
			cmds = append(cmds, [][]byte{[]byte("MULTI")}, [][]byte{[]byte("INCRBY"), wkey, hits},
				[][]byte{[]byte("PEXPIREAT"), wkey, []byte(strconv.FormatInt(dec.window*1000, 10))}, [][]byte{[]byte("EXEC")})
			dec.cmds = 4
		}
	}
	var replies [][]byte
	if len(cmds) > 0 {
		var err error
		replies, err = s.exec.Do(now, cmds...)
		if err != nil {
			return nil, grpcError(err)
		}
	}
	// A sliding-window limiter answers limit 0 when it does not exist: dropped with
	// RATELIMIT.DROP or FLUSHALL, or never created on this node (a Raft follower when the
	// configuration was loaded). Create it and check again, once.
	for i := range ds {
		dec := &ds[i]
		if dec.cmdIndex < 0 || dec.rule.Algorithm != SlidingWindow {
			continue
		}
		if vals, ok := parseInts(replies[dec.cmdIndex]); !ok || len(vals) < 5 || vals[3] != 0 {
			continue
		}
		r := dec.rule
		check := cmds[dec.cmdIndex]
		again, err := s.exec.Do(now, [][]byte{[]byte("RATELIMIT.CREATE"), check[1], []byte(strconv.FormatUint(uint64(r.RequestsPerUnit), 10)),
			[]byte(strconv.FormatInt(r.PeriodMs(), 10)), []byte("ALGO"), []byte("sliding_window")}, check)
		if err != nil {
			return nil, grpcError(err)
		}
		replies[dec.cmdIndex] = again[1]
	}
	resp := &rlpb.RateLimitResponse{OverallCode: rlpb.RateLimitResponse_OK, Statuses: make([]*rlpb.RateLimitResponse_DescriptorStatus, len(ds))}
	minIdx := -1
	for i := range ds {
		dec := &ds[i]
		st, err := s.evaluate(dec, replies, now)
		if err != nil {
			return nil, err
		}
		resp.Statuses[i] = st
		if st.Code == rlpb.RateLimitResponse_OVER_LIMIT {
			resp.OverallCode = rlpb.RateLimitResponse_OVER_LIMIT
		}
		if st.CurrentLimit != nil && (minIdx < 0 || st.LimitRemaining < resp.Statuses[minIdx].LimitRemaining) {
			minIdx = i
		}
	}
	if minIdx >= 0 && s.Headers.Load() {
		st := resp.Statuses[minIdx]
		l := st.CurrentLimit
		limit := strconv.FormatUint(uint64(l.RequestsPerUnit), 10)
		lv := limit + ", " + limit + ";w=" + strconv.FormatInt(Unit(l.Unit).Seconds(), 10)
		if l.Name != "" {
			lv += ";name=\"" + l.Name + "\""
		}
		reset := int64(0)
		if d := st.DurationUntilReset; d != nil {
			reset = d.Seconds
			if d.Nanos > 0 {
				reset++
			}
		}
		resp.ResponseHeadersToAdd = []*core.HeaderValue{
			{Key: "x-ratelimit-limit", Value: lv},
			{Key: "x-ratelimit-remaining", Value: strconv.FormatUint(uint64(st.LimitRemaining), 10)},
			{Key: "x-ratelimit-reset", Value: strconv.FormatInt(reset, 10)},
		}
	}
	return resp, nil
}

// evaluate turns a descriptor's replies into its status and counts it.
func (s *Service) evaluate(dec *decision, replies [][]byte, now int64) (*rlpb.RateLimitResponse_DescriptorStatus, error) {
	r := dec.rule
	if r == nil {
		return &rlpb.RateLimitResponse_DescriptorStatus{Code: rlpb.RateLimitResponse_OK}, nil
	}
	if r.Unlimited {
		s.stats.count(r, dec.statKey, dec.hits, false, false)
		return &rlpb.RateLimitResponse_DescriptorStatus{Code: rlpb.RateLimitResponse_OK, LimitRemaining: math.MaxUint32}, nil
	}
	if r.RequestsPerUnit == 0 {
		s.stats.count(r, dec.statKey, dec.hits, true, false)
		st := &rlpb.RateLimitResponse_DescriptorStatus{Code: rlpb.RateLimitResponse_OVER_LIMIT,
			CurrentLimit:       &rlpb.RateLimitResponse_RateLimit{Name: r.Name, Unit: rlpb.RateLimitResponse_RateLimit_Unit(r.Unit)},
			DurationUntilReset: durationpb.New(msDuration(r.PeriodMs() - now%r.PeriodMs()))}
		if r.Shadow {
			st.Code = rlpb.RateLimitResponse_OK
		}
		return st, nil
	}
	if dec.cmdIndex < 0 {
		// A refund for an algorithm without refunds: nothing charged.
		return &rlpb.RateLimitResponse_DescriptorStatus{Code: rlpb.RateLimitResponse_OK,
			CurrentLimit: &rlpb.RateLimitResponse_RateLimit{Name: r.Name, RequestsPerUnit: r.RequestsPerUnit, Unit: rlpb.RateLimitResponse_RateLimit_Unit(r.Unit)}}, nil
	}
	// The first error of the descriptor's commands says why (a MOVED inside a MULTI makes
	// its EXEC reply EXECABORT).
	for _, rep := range replies[dec.cmdIndex : dec.cmdIndex+dec.cmds] {
		if isError(rep) {
			msg := errorText(rep)
			if unavailableReply(msg) {
				return nil, status.Error(codes.Unavailable, msg)
			}
			return nil, status.Error(codes.Internal, "rate limit command failed: "+msg)
		}
	}
	rep := replies[dec.cmdIndex+dec.cmds-1]
	vals, ok := parseInts(rep)
	var over bool
	var remaining, used int64
	var resetMs int64
	switch r.Algorithm {
	case GCRA:
		// [denied, limit, remaining, retry_after_ms, reset_after_ms]
		if !ok || len(vals) != 5 {
			return nil, status.Error(codes.Internal, "unexpected GCRA.LIMIT reply")
		}
		over, remaining = vals[0] == 1, vals[2]
		used = vals[1] - remaining
		resetMs = vals[4]
		if over && vals[3] >= 0 {
			resetMs = vals[3]
		}
	case SlidingWindow:
		// [allowed, remaining, retry_after_ms, limit, current]
		if !ok || len(vals) < 5 {
			return nil, status.Error(codes.Internal, "unexpected RATELIMIT.CHECK reply: "+string(rep))
		}
		over, remaining, used = vals[0] == 0, vals[1], vals[4]
		resetMs = r.PeriodMs()
		if over && vals[2] >= 0 {
			resetMs = vals[2]
		}
	case FixedWindow:
		// EXEC: [count after INCRBY, PEXPIREAT's 1]
		if !ok || len(vals) != 2 {
			return nil, status.Error(codes.Internal, "unexpected fixed window reply: "+string(rep))
		}
		used = vals[0]
		limit := int64(r.RequestsPerUnit)
		over = used > limit
		remaining = max(limit-used, 0)
		resetMs = (dec.window - now/1000) * 1000
	}
	near := !over && used > int64(r.RequestsPerUnit)*8/10
	if !dec.refund {
		s.stats.count(r, dec.statKey, dec.hits, over, near)
	}
	st := &rlpb.RateLimitResponse_DescriptorStatus{
		Code:               rlpb.RateLimitResponse_OK,
		CurrentLimit:       &rlpb.RateLimitResponse_RateLimit{Name: r.Name, RequestsPerUnit: r.RequestsPerUnit, Unit: rlpb.RateLimitResponse_RateLimit_Unit(r.Unit)},
		LimitRemaining:     uint32(min(max(remaining, 0), math.MaxUint32)),
		DurationUntilReset: durationpb.New(msDuration(resetMs)),
	}
	if over && !r.Shadow {
		st.Code = rlpb.RateLimitResponse_OVER_LIMIT
	}
	return st, nil
}

// grpcError maps an Executor error to its gRPC status: UNAVAILABLE when this node cannot
// decide (Envoy applies its failure mode), INTERNAL otherwise.
func grpcError(err error) error {
	if errors.Is(err, ErrUnavailable) {
		return status.Error(codes.Unavailable, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

// overrideRule is the rule for a descriptor that carries its own limit (Envoy's
// `limit` override): GCRA, as every rule without an algorithm.
func overrideRule(domain string, entries []Entry, rpu uint32, unit Unit) *Rule {
	var b strings.Builder
	b.WriteString(domain)
	for _, e := range entries {
		b.WriteByte('.')
		b.WriteString(e.Key)
		if e.Value != "" {
			b.WriteByte('_')
			b.WriteString(e.Value)
		}
	}
	r := &Rule{Domain: domain, Path: b.String(), Unit: unit, RequestsPerUnit: rpu, Burst: int64(rpu), GCRAPeriodMs: unit.Seconds() * 1000}
	if unit.Seconds() == 0 {
		r.Unlimited = true // an override HotKV cannot apply limits nothing
	}
	return r
}
