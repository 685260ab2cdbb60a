//go:build !linux

package bench

// epollEngine is false: without epoll every run has a goroutine per connection.
const epollEngine = false

func takeFds([]*worker) error  { return nil }
func closeFds([]*worker)       {}
func runLoops(*run, []*worker) { panic("no event loop on this platform") }
