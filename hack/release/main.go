// Command release builds what `make release` ships into one folder: the controller image for linux/amd64
// and linux/arm64 as an OCI image layout (image/) and a tarball of it (lathe-image.tar), the packaged
// chart and the packaged CRD chart. See docs/release.md.
//
//	go run ./hack/release -version 0.1.0 -commit $(git rev-parse HEAD) -source-date-epoch $(git log -1 --format=%ct) \
//	  -image ghcr.io/lathe-autoscaler/lathe -chart charts/lathe -crd-chart charts/lathe-crd -out dist
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/lathe-autoscaler/lathe/hack/release/chartpackage"
	"github.com/lathe-autoscaler/lathe/hack/release/ociimage"
)

type flags struct {
	version, commit, image, source, caBundle string
	chart, crdChart, out, pkg                string
	epoch                                    int64
}

func main() {
	var f flags
	flag.StringVar(&f.version, "version", "", "release version (the VERSION file): image tag, chart version and appVersion, main.version")
	flag.StringVar(&f.commit, "commit", "", "git commit: main.commit and the image's revision label")
	flag.Int64Var(&f.epoch, "source-date-epoch", 0, "Unix time every timestamp in the image is set to (SOURCE_DATE_EPOCH or the commit time)")
	flag.StringVar(&f.image, "image", "ghcr.io/lathe-autoscaler/lathe", "image repository; the tag is the version")
	flag.StringVar(&f.source, "source", "https://github.com/lathe-autoscaler/lathe", "repository URL for the image's source label")
	flag.StringVar(&f.caBundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "CA bundle to put in the image")
	flag.StringVar(&f.pkg, "package", "./cmd/lathe", "main package of the controller")
	flag.StringVar(&f.chart, "chart", "charts/lathe", "chart folder whose default image must be the built image")
	flag.StringVar(&f.crdChart, "crd-chart", "charts/lathe-crd", "CRD chart folder")
	flag.StringVar(&f.out, "out", "dist", "output folder")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, f); err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, f flags) error {
	if f.version == "" || f.commit == "" || f.epoch <= 0 {
		return fmt.Errorf("-version, -commit and -source-date-epoch are required")
	}
	ref := f.image + ":" + f.version
	// Check the charts before the long part, the compile.
	release := chartpackage.Release{Version: f.version, Image: ref}
	if _, err := chartpackage.Verify(f.chart, release); err != nil {
		return err
	}
	if _, err := chartpackage.Verify(f.crdChart, chartpackage.Release{Version: f.version}); err != nil {
		return err
	}

	created := time.Unix(f.epoch, 0).UTC()
	index, err := ociimage.Build(ctx, ociimage.Config{
		SourceDir: ".", Package: f.pkg, Version: f.version, Commit: f.commit,
		Source: f.source, Created: created, CABundle: f.caBundle,
	})
	if err != nil {
		return err
	}
	layoutDir := filepath.Join(f.out, "image")
	if err := ociimage.WriteLayout(index, layoutDir, f.image, f.version); err != nil {
		return err
	}
	if err := ociimage.WriteArchive(layoutDir, filepath.Join(f.out, "lathe-image.tar"), created); err != nil {
		return err
	}
	digest, err := index.Digest()
	if err != nil {
		return fmt.Errorf("computing the index digest, %w", err)
	}
	fmt.Printf("image %s@%s\n  %s\n  %s\n", ref, digest, layoutDir, filepath.Join(f.out, "lathe-image.tar"))

	release.Digest = digest.String()
	for _, c := range []struct {
		dir     string
		release chartpackage.Release
	}{{f.chart, release}, {f.crdChart, chartpackage.Release{Version: f.version}}} {
		path, err := chartpackage.Package(c.dir, f.out, c.release)
		if err != nil {
			return err
		}
		fmt.Printf("chart %s\n", path)
	}
	return nil
}
