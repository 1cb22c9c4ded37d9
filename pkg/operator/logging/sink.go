package logging

import (
	"fmt"

	"github.com/go-logr/logr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// sink adapts a zap.Logger to logr. logr's V(n) is zap level -n, so V(0) is info and V(1) is debug.
type sink struct {
	logger *zap.Logger
}

var (
	_ logr.LogSink          = (*sink)(nil)
	_ logr.CallDepthLogSink = (*sink)(nil)
)

// Init skips the logr.Logger frames so that the caller field names the code that logged.
func (s *sink) Init(info logr.RuntimeInfo) {
	s.logger = s.logger.WithOptions(zap.AddCallerSkip(info.CallDepth + 1))
}

func (s *sink) Enabled(level int) bool {
	return s.logger.Core().Enabled(zapLevel(level))
}

func (s *sink) Info(level int, msg string, keysAndValues ...any) {
	if entry := s.logger.Check(zapLevel(level), msg); entry != nil {
		entry.Write(fields(keysAndValues)...)
	}
}

func (s *sink) Error(err error, msg string, keysAndValues ...any) {
	if entry := s.logger.Check(zapcore.ErrorLevel, msg); entry != nil {
		entry.Write(append(fields(keysAndValues), zap.Error(err))...)
	}
}

func (s *sink) WithValues(keysAndValues ...any) logr.LogSink {
	return &sink{logger: s.logger.With(fields(keysAndValues)...)}
}

func (s *sink) WithName(name string) logr.LogSink {
	return &sink{logger: s.logger.Named(name)}
}

func (s *sink) WithCallDepth(depth int) logr.LogSink {
	return &sink{logger: s.logger.WithOptions(zap.AddCallerSkip(depth))}
}

// zapLevel turns a logr verbosity into a zap level, clamped to zap's int8 range.
func zapLevel(verbosity int) zapcore.Level {
	return zapcore.Level(-min(max(verbosity, 0), 127))
}

// fields turns logr key/value pairs into zap fields. A key that is not a string is printed with fmt; a
// trailing key without a value is kept with the value "(MISSING)" so the mistake shows in the output. Values
// that implement logr.Marshaler (klog.KObj, klog.KRef) are logged as what MarshalLog returns.
func fields(keysAndValues []any) []zap.Field {
	out := make([]zap.Field, 0, (len(keysAndValues)+1)/2)
	for i := 0; i < len(keysAndValues); i += 2 {
		key, ok := keysAndValues[i].(string)
		if !ok {
			key = fmt.Sprint(keysAndValues[i])
		}
		if i+1 == len(keysAndValues) {
			out = append(out, zap.String(key, "(MISSING)"))
			break
		}
		value := keysAndValues[i+1]
		if m, ok := value.(logr.Marshaler); ok {
			value = m.MarshalLog()
		}
		out = append(out, zap.Any(key, value))
	}
	return out
}
