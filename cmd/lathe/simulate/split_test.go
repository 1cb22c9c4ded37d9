package simulate

import (
	"bytes"
	"reflect"
	"testing"
)

var splitCases = []string{
	"", "\n", "a: 1", "a: 1\n", "---\na: 1\n", "a: 1\n---\nb: 2\n", "a: 1\n---\n---\nb: 2\n---\n",
	"--- # c\na: 1\n---  \nb: 2", "a: 1\n--- x\n", "a: 1\n----\n", "a: 1\n  ---\nb: 2\n", "---\n", "---",
	"a: 1\n\n\n---\n\n", "a: |\n  ---\n", "a: 1\r\n---\r\nb: 2\r\n", "a: 1\n---\tx\n", "# only\n---\n# comments\n",
}

func checkSplit(t *testing.T, data []byte) {
	t.Helper()
	got, ok, err := splitDocuments(data)
	if !ok {
		if bytes.IndexByte(data, '\r') < 0 {
			t.Errorf("%q: declined without a carriage return", data)
		}
		return
	}
	want, wantErr := readDocuments(bytes.NewReader(data))
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Errorf("%q: error %v, want %v", data, err, wantErr)
	}
	if len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
		t.Errorf("%q: documents %q, want %q", data, got, want)
	}
}

func TestSplitDocuments(t *testing.T) {
	for _, c := range splitCases {
		checkSplit(t, []byte(c))
	}
	for _, d := range exampleDocuments(t) {
		checkSplit(t, d)
	}
}

func FuzzSplitDocuments(f *testing.F) {
	for _, c := range splitCases {
		f.Add([]byte(c))
	}
	f.Fuzz(checkSplit)
}
