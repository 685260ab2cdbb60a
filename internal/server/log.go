package server

import (
	"io"
	"log/slog"
	"os"
)

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
	lv := slog.LevelInfo
	switch level {
	case "debug", "verbose":
		lv = slog.LevelDebug
	case "warning":
		lv = slog.LevelWarn
	case "nothing":
		out = io.Discard
	}
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: lv})), closer, nil
}
