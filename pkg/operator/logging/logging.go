// Package logging builds Lathe's production logger: zap writing JSON lines, exposed as a logr.Logger so that
// controller-runtime, client-go (through klog) and Lathe's own code share one sink.
//
// Each line looks like Karpenter's:
//
//	{"level":"INFO","time":"2026-08-20T10:00:00.000Z","logger":"operator","caller":"operator/operator.go:120","message":"controller started","version":"v0.1.0"}
//
// Conventions for callers: messages are constant strings; variable data goes in key/value pairs; the key for a
// Kubernetes object is its Kind (NodePool, NodeClaim, Node, Pod) with a klog.KObj/KRef value, which is written
// as {"name":...,"namespace":...}; every other key is lowerCamelCase. Only V(0) (shown at LOG_LEVEL info) and
// V(1) (shown at debug) are used; Error entries are always shown.
package logging

import (
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Config says where the logger writes and how much.
type Config struct {
	// Level is debug, info or error.
	Level string
	// OutputPaths are zap sinks for log entries: "stdout", "stderr" or file paths. Empty means stdout.
	OutputPaths []string
	// ErrorOutputPaths are zap sinks for the logger's own internal errors (for example a failed write).
	// Empty means stderr.
	ErrorOutputPaths []string
}

// samplingTick is the window zap's sampler counts repeated messages in.
const samplingTick = time.Second

// New builds the logger. The returned function flushes buffered entries and closes any files the logger
// opened; call it once, when the process is done logging.
func New(cfg Config) (logr.Logger, func() error, error) {
	level, err := parseLevel(cfg.Level)
	if err != nil {
		return logr.Discard(), nil, err
	}
	outputPaths := orDefault(cfg.OutputPaths, "stdout")
	errorPaths := orDefault(cfg.ErrorOutputPaths, "stderr")
	out, closeOut, err := zap.Open(outputPaths...)
	if err != nil {
		return logr.Discard(), nil, fmt.Errorf("opening log output paths %v, %w", outputPaths, err)
	}
	errOut, closeErrOut, err := zap.Open(errorPaths...)
	if err != nil {
		closeOut()
		return logr.Discard(), nil, fmt.Errorf("opening log error output paths %v, %w", errorPaths, err)
	}
	core := zapcore.NewCore(zapcore.NewJSONEncoder(EncoderConfig()), out, level)
	// Sampling as in zap's production preset: per message and second, the first 100 entries and then every
	// 100th are kept, so a hot loop can't flood the output.
	core = zapcore.NewSamplerWithOptions(core, samplingTick, 100, 100)
	zl := zap.New(core, zap.ErrorOutput(errOut), zap.AddCaller())
	flush := func() error {
		syncErr := zl.Sync()
		closeOut()
		closeErrOut()
		if syncErr != nil && !ignorableSyncError(syncErr) {
			return fmt.Errorf("flushing logs, %w", syncErr)
		}
		return nil
	}
	return logr.New(&sink{logger: zl}), flush, nil
}

// EncoderConfig is zap's production JSON encoder with Karpenter's key names (time, level, logger, caller,
// message), ISO8601 times, upper-case levels and no stack traces.
func EncoderConfig() zapcore.EncoderConfig {
	cfg := zap.NewProductionEncoderConfig()
	cfg.TimeKey = "time"
	cfg.LevelKey = "level"
	cfg.NameKey = "logger"
	cfg.CallerKey = "caller"
	cfg.MessageKey = "message"
	cfg.StacktraceKey = zapcore.OmitKey
	cfg.FunctionKey = zapcore.OmitKey
	cfg.EncodeTime = zapcore.ISO8601TimeEncoder
	cfg.EncodeLevel = zapcore.CapitalLevelEncoder
	cfg.EncodeDuration = zapcore.StringDurationEncoder
	cfg.EncodeCaller = zapcore.ShortCallerEncoder
	return cfg
}

// parseLevel maps LOG_LEVEL to the lowest zap level written. logr's V(1) is zap's debug level.
func parseLevel(level string) (zapcore.Level, error) {
	switch level {
	case "debug":
		return zapcore.DebugLevel, nil
	case "info", "":
		return zapcore.InfoLevel, nil
	case "error":
		return zapcore.ErrorLevel, nil
	}
	return 0, fmt.Errorf("parsing log level %q, must be one of debug, info, error", level)
}

func orDefault(paths []string, def string) []string {
	if len(paths) == 0 {
		return []string{def}
	}
	return slices.Clone(paths)
}

// ignorableSyncError reports whether Sync failed only because an output is a terminal or pipe that can't be
// synced (EINVAL or ENOTTY on stdout and stderr), which loses nothing.
func ignorableSyncError(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTTY)
}
