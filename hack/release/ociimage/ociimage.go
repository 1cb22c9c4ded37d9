// Package ociimage builds Lathe's controller image without a container engine: it cross-compiles a static
// binary per platform, puts it in one layer with a CA bundle and a minimal /etc/passwd on an empty base,
// and writes the multi-platform image index as an OCI image layout and as a tarball of that layout.
//
// The build is reproducible: every timestamp (config, history, tar headers) is Config.Created, files are
// written in a fixed order with fixed owners, and the binaries are built with -trimpath and -buildvcs=false,
// so two builds of the same source with the same Go toolchain give the same index digest.
//
//	index, err := ociimage.Build(ctx, ociimage.Config{...})
//	err = ociimage.WriteLayout(index, "dist/image", ref)
//	err = ociimage.WriteArchive("dist/image", "dist/lathe-image.tar", created)
package ociimage

import (
	"context"
	"fmt"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's fixed shape, shared with the chart's defaults (docs/release.md).
const (
	// Entrypoint is where the binary sits in the image.
	Entrypoint = "/lathe"
	// User is distroless' nonroot user and group.
	User = "65532:65532"
	// CABundlePath is where the CA bundle sits in the image; SSL_CERT_FILE points Go's TLS at it.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"

	// Label keys of the OCI image spec's pre-defined annotations.
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelSource   = "org.opencontainers.image.source"
)

// DefaultPlatforms are the platforms a release ships.
var DefaultPlatforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// Config says what to build.
type Config struct {
	// SourceDir is the module root, Package the main package in it (e.g. "./cmd/lathe").
	SourceDir, Package string
	// Version and Commit are stamped into the binary (main.version, main.commit) and the image labels.
	Version, Commit string
	// Source is the repository URL for the org.opencontainers.image.source label.
	Source string
	// Created is every timestamp in the image; use the commit time or SOURCE_DATE_EPOCH.
	Created time.Time
	// CABundle is the path of the CA bundle to copy into the image (the build machine's).
	CABundle string
	// Platforms to build; DefaultPlatforms when empty.
	Platforms []v1.Platform
	// WorkDir holds the compiled binaries; a temporary folder when empty.
	WorkDir string
}

// Build compiles the binary for each platform and returns the image index of the images.
func Build(ctx context.Context, cfg Config) (v1.ImageIndex, error) {
	if cfg.Version == "" || cfg.Commit == "" {
		return nil, fmt.Errorf("building image, version and commit are required")
	}
	if cfg.Created.IsZero() {
		return nil, fmt.Errorf("building image, a creation time is required (the commit time or SOURCE_DATE_EPOCH)")
	}
	platforms := cfg.Platforms
	if len(platforms) == 0 {
		platforms = DefaultPlatforms
	}
	bundle, err := readCABundle(cfg.CABundle)
	if err != nil {
		return nil, err
	}
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, platform := range platforms {
		binary, err := compile(ctx, cfg, platform)
		if err != nil {
			return nil, err
		}
		img, err := image(cfg, platform, binary, bundle)
		if err != nil {
			return nil, err
		}
		index = mutate.AppendManifests(index, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &platform},
		})
	}
	return index, nil
}

// image assembles one platform's image: an empty base, one layer, and the config.
func image(cfg Config, platform v1.Platform, binary, bundle []byte) (v1.Image, error) {
	layer, err := newLayer(files(binary, bundle), cfg.Created)
	if err != nil {
		return nil, fmt.Errorf("building the %s layer, %w", platform, err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	created := v1.Time{Time: cfg.Created.UTC()}
	img, err := mutate.ConfigFile(base, &v1.ConfigFile{
		Architecture: platform.Architecture,
		OS:           platform.OS,
		Variant:      platform.Variant,
		Created:      created,
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Entrypoint: []string{Entrypoint},
			User:       User,
			WorkingDir: "/",
			Env:        []string{"SSL_CERT_FILE=" + CABundlePath},
			Labels: map[string]string{
				LabelVersion:  cfg.Version,
				LabelRevision: cfg.Commit,
				LabelSource:   cfg.Source,
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("setting the %s config, %w", platform, err)
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   created,
			CreatedBy: "hack/release: " + cfg.Package + ", CA bundle, /etc/passwd",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("adding the %s layer, %w", platform, err)
	}
	return img, nil
}
