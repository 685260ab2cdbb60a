package server

import (
	"io"
	"log/slog"
	"os"
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
// slog levels (debug, verbose → debug; notice → info; warning → warn; nothing → off).
func NewLogger(file, level string) (*slog.Logger, func(), error) {
	var out io.Writer = os.Stdout
	closer := func() {}
	if file != "" {
		f, err := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, nil, err
		}
		out = f
		closer = func() { _ = f.Close() }
	}
	logLevel.Set(levelFor(level))
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: logLevel})), closer, nil
}
