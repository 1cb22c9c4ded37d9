package ociimage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// compile cross-compiles cfg.Package for platform into a static binary and returns its bytes.
func compile(ctx context.Context, cfg Config, platform v1.Platform) ([]byte, error) {
	dir := cfg.WorkDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "lathe-release-")
		if err != nil {
			return nil, fmt.Errorf("creating a build folder, %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	out := filepath.Join(dir, platform.OS+"_"+platform.Architecture, filepath.Base(Entrypoint))
	ldflags := fmt.Sprintf("-s -w -X main.version=%s -X main.commit=%s", cfg.Version, cfg.Commit)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, cfg.Package)
	cmd.Dir = cfg.SourceDir
	dieWithParent(cmd)
	cmd.Env = append(buildEnv(os.Environ()), "CGO_ENABLED=0", "GOOS="+platform.OS, "GOARCH="+platform.Architecture)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("compiling %s for %s, %w\n%s", cfg.Package, platform, err, stderr.String())
	}
	binary, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("reading the %s binary, %w", platform, err)
	}
	return binary, nil
}

// buildEnv drops the variables that would change the target or the code generated for it, so the same
// source always gives the same binary whatever the caller's environment says.
func buildEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "CGO_ENABLED", "GOOS", "GOARCH", "GOAMD64", "GOARM64", "GOEXPERIMENT", "GOFLAGS":
			continue
		}
		env = append(env, kv)
	}
	return env
}
