package localcluster

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// tailLines is how many of a process's last output lines are kept for error messages.
const tailLines = 20

// lineWriter splits a process's output into lines, writes each one prefixed with "[name] " to its
// destination in a single Write, and keeps the last few lines for error messages.
type lineWriter struct {
	prefix []byte
	dest   io.Writer

	mu      sync.Mutex
	partial []byte
	tail    []string
}

func newLineWriter(name string, dest io.Writer) *lineWriter {
	if dest == nil {
		dest = io.Discard
	}
	return &lineWriter{prefix: []byte("[" + name + "] "), dest: dest}
}

// Write never fails, so a full or broken log destination cannot stall or kill the child process.
func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, b...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.emit(w.partial[:i])
		w.partial = w.partial[i+1:]
	}
	return len(b), nil
}

// Flush writes out a last line that did not end in a newline.
func (w *lineWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.emit(w.partial)
		w.partial = nil
	}
}

// Note writes a line of the launcher's own about this process.
func (w *lineWriter) Note(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.emit([]byte("(launcher) " + msg))
}

// Tail returns the last lines written, oldest first.
func (w *lineWriter) Tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.tail, "\n")
}

func (w *lineWriter) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	out := make([]byte, 0, len(w.prefix)+len(line)+1)
	out = append(append(append(out, w.prefix...), line...), '\n')
	_, _ = w.dest.Write(out)
	if len(w.tail) == tailLines {
		w.tail = append(w.tail[:0], w.tail[1:]...)
	}
	w.tail = append(w.tail, string(line))
}

// syncWriter serialises writes from the output goroutines of several processes.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func newSyncWriter(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return &syncWriter{w: w}
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
