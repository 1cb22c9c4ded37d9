// Package chartpackage packages a Helm chart folder into <name>-<version>.tgz with Helm's own Go packages
// (the loader and chartutil.Save, what `helm package` runs), after checking that the chart matches the
// release: version and appVersion equal the release version and, for a chart that deploys the
// controller, the default image (controller.image.repository, with controller.image.tag or else the
// appVersion) is the image the release builds.
package chartpackage

import (
	"fmt"
	"os"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// Release is what a packaged chart must agree with.
type Release struct {
	// Version is the release version: the chart's version and appVersion.
	Version string
	// Image is the image reference (repository:tag) the release builds, and Digest its index digest.
	// Empty Image: the chart deploys no controller (the CRD chart) and has no image to check.
	Image, Digest string
}

// Package checks the chart in dir against release and writes <name>-<version>.tgz into outDir. It returns
// the path of the written archive.
func Package(dir, outDir string, release Release) (string, error) {
	ch, err := Verify(dir, release)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s, %w", outDir, err)
	}
	path, err := chartutil.Save(ch, outDir)
	if err != nil {
		return "", fmt.Errorf("packaging chart %s, %w", dir, err)
	}
	return path, nil
}

// Verify loads the chart in dir as Helm does and checks it against release.
func Verify(dir string, release Release) (*chart.Chart, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s, %w", dir, err)
	}
	if err := ch.Validate(); err != nil {
		return nil, fmt.Errorf("validating chart %s, %w", dir, err)
	}
	if err := Check(ch, release); err != nil {
		return nil, fmt.Errorf("checking chart %s, %w", dir, err)
	}
	return ch, nil
}

// Check reports the first way ch disagrees with release.
func Check(ch *chart.Chart, release Release) error {
	if ch.Metadata.Version != release.Version {
		return fmt.Errorf("chart version %q differs from the release version %q", ch.Metadata.Version, release.Version)
	}
	if ch.Metadata.AppVersion != release.Version {
		return fmt.Errorf("chart appVersion %q differs from the release version %q", ch.Metadata.AppVersion, release.Version)
	}
	if release.Image == "" {
		return nil
	}
	values := chartutil.Values(ch.Values)
	repository, err := values.PathValue("controller.image.repository")
	if err != nil {
		return fmt.Errorf("reading controller.image.repository, %w", err)
	}
	tag, _ := values.PathValue("controller.image.tag")
	if tag == nil || tag == "" {
		tag = ch.Metadata.AppVersion
	}
	if image := fmt.Sprintf("%v:%v", repository, tag); image != release.Image {
		return fmt.Errorf("default image %s differs from the image the release builds, %s", image, release.Image)
	}
	if digest, _ := values.PathValue("controller.image.digest"); digest != nil && digest != "" && digest != release.Digest {
		return fmt.Errorf("default image digest %v differs from the digest the release builds, %s", digest, release.Digest)
	}
	return nil
}
