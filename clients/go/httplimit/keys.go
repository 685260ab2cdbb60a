package httplimit

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// KeyFunc picks the identity a request is limited under: a client IP, an API key, a user id.
// Every request with the same key shares one budget. An empty key is a valid key (all such
// requests share one budget); to exempt requests from limiting, make the cost function return
// 0 for them instead.
type KeyFunc func(r *http.Request) string

// ByIP keys requests by client IP address.
//
// With no trusted proxies it uses the connection's peer address (Request.RemoteAddr) and
// ignores X-Forwarded-For, which any client can forge. When the peer is one of the trusted
// prefixes (your load balancers), the key is the right-most X-Forwarded-For address that is
// not trusted: the address your own proxy saw, which a client cannot choose. If every listed
// address is trusted, the left-most one is used. Addresses are normalised (an IPv4-mapped
// IPv6 address becomes IPv4) so one client does not get two budgets.
func ByIP(trusted ...netip.Prefix) KeyFunc {
	isTrusted := func(a netip.Addr) bool {
		for _, p := range trusted {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	return func(r *http.Request) string {
		host := r.RemoteAddr
		if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
			host = h
		}
		peer, err := netip.ParseAddr(host)
		if err != nil {
			return host
		}
		peer = peer.Unmap()
		if len(trusted) == 0 || !isTrusted(peer) {
			return peer.String()
		}
		var hops []string
		for _, line := range r.Header.Values("X-Forwarded-For") {
			for _, h := range strings.Split(line, ",") {
				if h = strings.TrimSpace(h); h != "" {
					hops = append(hops, h)
				}
			}
		}
		if len(hops) == 0 {
			return peer.String()
		}
		for i := len(hops) - 1; i >= 0; i-- {
			a, err := netip.ParseAddr(hops[i])
			if err != nil {
				// Written by a trusted proxy but not an address: use it as it is rather than
				// skip to entries a client could have forged.
				return hops[i]
			}
			a = a.Unmap()
			if !isTrusted(a) || i == 0 {
				return a.String()
			}
		}
		return peer.String() // unreachable: the loop returns at i == 0
	}
}

// ByHeader keys requests by the value of a request header, such as an API key. Requests
// without the header share the empty key's budget; wrap it in your own KeyFunc to fall back
// to another key (ByIP, say) instead.
func ByHeader(name string) KeyFunc {
	return func(r *http.Request) string { return r.Header.Get(name) }
}
