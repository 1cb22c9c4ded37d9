package main

import (
	"bytes"
	"os"
	"testing"
)

// TestDocsCurrent fails when docs/metrics.txt or docs/metrics.md differ from what the code declares (run
// `make generate`).
func TestDocsCurrent(t *testing.T) {
	families := Families()
	for path, want := range map[string][]byte{
		"../../docs/metrics.txt": List(families),
		"../../docs/metrics.md":  Markdown(families),
	} {
		have, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(have, want) {
			t.Errorf("%s is stale: run make generate", path)
		}
	}
}
