package server

import (
	"io"
	"log/slog"
	"os"
	"sync"
)

// logLevel is the running server's log level; CONFIG SET loglevel changes it.
var logLevel = new(slog.LevelVar)

// levelFor maps Redis's level names onto slog levels.
func levelFor(level string) slog.Level {
	switch level {
	case "debug", "verbose":
		return slog.LevelDebug
	case "warning":
		return slog.LevelWarn
	case "nothing":
		return slog.LevelError + 4 // above every level the server logs at
	}
	return slog.LevelInfo
}

// NewLogger builds the server log from logfile and loglevel, mapping Redis's level names onto
// slog levels (debug, verbose → debug; notice → info; warning → warn; nothing → off). A
// logfile that cannot be opened is an error at startup.
func NewLogger(file, level string) (*slog.Logger, func(), error) {
	var out io.Writer = os.Stdout
	if file != "" {
		f, err := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, nil, err
		}
		_ = f.Close()
		out = &reopeningFile{path: file}
	}
	logLevel.Set(levelFor(level))
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: logLevel})), func() {}, nil
}

// reopeningFile appends each log record to the file by its name, opening it for every record
// as Redis's serverLogRaw does: when logrotate renames or deletes the log, the next record
// starts a new file at the configured path, with no signal or restart (and no copytruncate)
// needed. Log records are rare next to commands, so the open per record costs nothing that
// matters; at loglevel debug with many clients it is the price Redis pays too.
type reopeningFile struct {
	mu   sync.Mutex
	path string
}

func (r *reopeningFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := os.OpenFile(r.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	n, err := f.Write(p)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}
