package loopback

import (
	"os"
	"path/filepath"
	"testing"
)

// Ports are drawn below the ephemeral range, where outgoing connections never take them between the draw
// and the component's bind.
func TestFreePortsAvoidTheEphemeralRange(t *testing.T) {
	lo, ok := ephemeralLow(ephemeralRangeFile)
	if !ok || lo-lowestPort < 1000 {
		t.Skipf("no ephemeral port range with room below it here (%s)", ephemeralRangeFile)
	}
	ports, err := FreePorts(6)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lowestPort || p >= lo {
			t.Errorf("port %d is outside [%d, %d)", p, lowestPort, lo)
		}
		if seen[p] {
			t.Errorf("port %d drawn twice", p)
		}
		seen[p] = true
	}
}

func TestEphemeralLow(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	if lo, ok := ephemeralLow(write("linux", "32768\t60999\n")); !ok || lo != 32768 {
		t.Errorf("ephemeralLow = %d, %v; want 32768, true", lo, ok)
	}
	for name, text := range map[string]string{"empty": "", "one": "32768\n", "words": "low high\n"} {
		if _, ok := ephemeralLow(write(name, text)); ok {
			t.Errorf("%s: read a range from %q", name, text)
		}
	}
	if _, ok := ephemeralLow(filepath.Join(dir, "missing")); ok {
		t.Error("read a range from a missing file")
	}
}
