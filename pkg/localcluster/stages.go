package localcluster

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"sort"
)

// stageFiles are the kwok Stages that play the kubelet: Nodes become Ready and keep their lease, and
// pods start, run, complete (Job pods) and go away when deleted, each without delay; and kwok's
// configuration (kwok-configuration.yaml), which lets it play many kubelets at once.
//
//go:embed stages/*.yaml
var stageFiles embed.FS

// writeStages writes every embedded document into one multi-document file for kwok's --config.
func writeStages(path string) error {
	names, err := fs.Glob(stageFiles, "stages/*.yaml")
	if err != nil {
		return fmt.Errorf("listing kwok stages, %w", err)
	}
	sort.Strings(names)
	var out bytes.Buffer
	for _, name := range names {
		b, err := stageFiles.ReadFile(name)
		if err != nil {
			return fmt.Errorf("reading kwok stage %s, %w", name, err)
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		return fmt.Errorf("writing kwok stages, %w", err)
	}
	return nil
}
