package ociimage_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/lathe-autoscaler/lathe/hack/release/ociimage"
)

const (
	repository = "ghcr.io/lathe-autoscaler/lathe"
	commit     = "0123456789abcdef0123456789abcdef01234567"
	source     = "https://github.com/lathe-autoscaler/lathe"
	caBundle   = "/etc/ssl/certs/ca-certificates.crt"
)

var (
	// created is the fixed time every timestamp of the test image carries.
	created = time.Unix(1767225600, 0).UTC()
	// version is the repository's VERSION, as make release stamps it.
	version string
	// release is the output of the one build every test inspects: dir/image and dir/lathe-image.tar.
	release string
)

// TestMain builds the image for both platforms once; the tests share the result.
func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	raw, err := os.ReadFile("../../../VERSION")
	if err != nil {
		fmt.Fprintf(os.Stderr, "reading VERSION, %v\n", err)
		return 1
	}
	version = strings.TrimSpace(string(raw))
	dir, err := os.MkdirTemp("", "lathe-release-test-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating temp dir, %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	release = filepath.Join(dir, "first")
	if err := buildRelease(release); err != nil {
		fmt.Fprintf(os.Stderr, "building the image, %v\n", err)
		return 1
	}
	return m.Run()
}

// buildRelease runs the builder as make release does and writes the layout and the tarball under out.
func buildRelease(out string) error {
	work := filepath.Join(out, "work")
	index, err := ociimage.Build(context.Background(), ociimage.Config{
		SourceDir: "../../..", Package: "./hack/release/ociimage/testdata/stamped", Version: version, Commit: commit,
		Source: source, Created: created, CABundle: caBundle, WorkDir: work,
	})
	if err != nil {
		return err
	}
	if err := ociimage.WriteLayout(index, filepath.Join(out, "image"), repository, version); err != nil {
		return err
	}
	return ociimage.WriteArchive(filepath.Join(out, "image"), filepath.Join(out, "lathe-image.tar"), created)
}

// imageIndex opens the index the layout in dir names, checking the layout's own index.json on the way.
func imageIndex(t *testing.T, dir string) v1.ImageIndex {
	t.Helper()
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("opening layout %s, %v", dir, err)
	}
	manifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(manifest.Manifests) != 1 {
		t.Fatalf("layout index.json lists %d entries, want 1 (the image index)", len(manifest.Manifests))
	}
	entry := manifest.Manifests[0]
	if entry.MediaType != types.OCIImageIndex {
		t.Errorf("layout entry media type = %s, want %s", entry.MediaType, types.OCIImageIndex)
	}
	if got := entry.Annotations[ociimage.AnnotationRefName]; got != version {
		t.Errorf("layout entry %s = %q, want %q", ociimage.AnnotationRefName, got, version)
	}
	if got, want := entry.Annotations[ociimage.AnnotationContainerdRef], repository+":"+version; got != want {
		t.Errorf("layout entry %s = %q, want %q", ociimage.AnnotationContainerdRef, got, want)
	}
	index, err := top.ImageIndex(entry.Digest)
	if err != nil {
		t.Fatalf("opening the image index, %v", err)
	}
	return index
}

// images returns the index's images by architecture, failing unless they are exactly linux/amd64 and linux/arm64.
func images(t *testing.T, index v1.ImageIndex) map[string]v1.Image {
	t.Helper()
	manifest, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if manifest.MediaType != types.OCIImageIndex {
		t.Errorf("index media type = %s, want %s", manifest.MediaType, types.OCIImageIndex)
	}
	var platforms []string
	out := map[string]v1.Image{}
	for _, desc := range manifest.Manifests {
		if desc.MediaType != types.OCIManifestSchema1 || desc.Platform == nil {
			t.Fatalf("index entry %s: media type %s, platform %v; want an OCI manifest with a platform", desc.Digest, desc.MediaType, desc.Platform)
		}
		platforms = append(platforms, desc.Platform.String())
		img, err := index.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		out[desc.Platform.Architecture] = img
	}
	slices.Sort(platforms)
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Fatalf("index platforms = %v, want %v", platforms, want)
	}
	return out
}

// layerFiles reads the image's one layer into a map from path to header and content.
func layerFiles(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("image has %d layers, want 1", len(layers))
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
		t.Errorf("layer media type = %s, want %s", mt, types.OCILayer)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	return readTar(t, rc)
}

type entry struct {
	header *tar.Header
	data   []byte
}

func readTar(t *testing.T, r io.Reader) map[string]entry {
	t.Helper()
	files := map[string]entry{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("reading tar, %v", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = entry{header: hdr, data: data}
	}
}

func TestIndexHasExactlyTheTwoPlatforms(t *testing.T) {
	images(t, imageIndex(t, filepath.Join(release, "image")))
}

func TestImageConfig(t *testing.T) {
	for arch, img := range images(t, imageIndex(t, filepath.Join(release, "image"))) {
		t.Run(arch, func(t *testing.T) {
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.OS != "linux" || cfg.Architecture != arch {
				t.Errorf("config platform = %s/%s, want linux/%s", cfg.OS, cfg.Architecture, arch)
			}
			if !cfg.Created.Time.Equal(created) {
				t.Errorf("created = %v, want %v", cfg.Created.Time, created)
			}
			if want := []string{"/lathe"}; !slices.Equal(cfg.Config.Entrypoint, want) || len(cfg.Config.Cmd) != 0 {
				t.Errorf("entrypoint = %q cmd = %q, want %q and no cmd", cfg.Config.Entrypoint, cfg.Config.Cmd, want)
			}
			if cfg.Config.User != "65532:65532" {
				t.Errorf("user = %q, want 65532:65532", cfg.Config.User)
			}
			if !slices.Contains(cfg.Config.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt") {
				t.Errorf("env = %q, want SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt", cfg.Config.Env)
			}
			wantLabels := map[string]string{
				"org.opencontainers.image.version":  version,
				"org.opencontainers.image.revision": commit,
				"org.opencontainers.image.source":   source,
			}
			for k, v := range wantLabels {
				if cfg.Config.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, cfg.Config.Labels[k], v)
				}
			}
			if len(cfg.History) != 1 || !cfg.History[0].Created.Time.Equal(created) {
				t.Errorf("history = %+v, want one entry created at %v", cfg.History, created)
			}
		})
	}
}

func TestLayerHoldsBinaryCABundleAndPasswd(t *testing.T) {
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	bundle, err := os.ReadFile(caBundle)
	if err != nil {
		t.Fatal(err)
	}
	for arch, img := range images(t, imageIndex(t, filepath.Join(release, "image"))) {
		t.Run(arch, func(t *testing.T) {
			files := layerFiles(t, img)
			lathe, ok := files["lathe"]
			if !ok {
				t.Fatalf("layer has no /lathe; it has %v", keys(files))
			}
			if lathe.header.Mode != 0o755 || lathe.header.Uid != 0 || !lathe.header.ModTime.Equal(created) {
				t.Errorf("/lathe mode %o uid %d mtime %v, want 0755, root, %v", lathe.header.Mode, lathe.header.Uid, lathe.header.ModTime, created)
			}
			binary, err := elf.NewFile(bytes.NewReader(lathe.data))
			if err != nil {
				t.Fatalf("/lathe is not an ELF file, %v", err)
			}
			if binary.Machine != machines[arch] {
				t.Errorf("/lathe machine = %v, want %v", binary.Machine, machines[arch])
			}
			for _, prog := range binary.Progs {
				if prog.Type == elf.PT_INTERP {
					t.Errorf("/lathe asks for a dynamic loader; want a static binary (CGO_ENABLED=0)")
				}
			}
			if ca := files["etc/ssl/certs/ca-certificates.crt"]; !bytes.Equal(ca.data, bundle) {
				t.Errorf("layer CA bundle has %d bytes, want the build machine's %d", len(ca.data), len(bundle))
			}
			if passwd := string(files["etc/passwd"].data); !strings.Contains(passwd, "nonroot:x:65532:65532:") {
				t.Errorf("/etc/passwd = %q, want the nonroot user 65532", passwd)
			}
		})
	}
}

// TestBinaryPrintsVersionAndCommit runs the image's binary for the machine the test runs on.
func TestBinaryPrintsVersionAndCommit(t *testing.T) {
	img, ok := images(t, imageIndex(t, filepath.Join(release, "image")))[runtime.GOARCH]
	if !ok || runtime.GOOS != "linux" {
		t.Fatalf("the image has no binary for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	path := filepath.Join(t.TempDir(), "lathe")
	if err := os.WriteFile(path, layerFiles(t, img)["lathe"].data, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("lathe --version: %v\n%s", err, out)
	}
	if want := fmt.Sprintf("lathe %s commit %s ", version, commit); !strings.HasPrefix(string(out), want) {
		t.Errorf("lathe --version = %q, want it to start with %q", out, want)
	}
}

func TestArchiveHoldsTheLayout(t *testing.T) {
	f, err := os.Open(filepath.Join(release, "lathe-image.tar"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	for name, e := range readTar(t, f) {
		if !e.header.ModTime.Equal(created) || e.header.Uid != 0 {
			t.Errorf("%s: mtime %v uid %d, want %v and root", name, e.header.ModTime, e.header.Uid, created)
		}
		path := filepath.Join(dir, filepath.FromSlash(name))
		if e.header.Typeflag == tar.TypeDir {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, e.data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fromArchive, fromLayout := digest(t, imageIndex(t, dir)), digest(t, imageIndex(t, filepath.Join(release, "image")))
	if fromArchive != fromLayout {
		t.Errorf("archive's index digest %s, layout's %s; want the same", fromArchive, fromLayout)
	}
	images(t, imageIndex(t, dir))
}

// TestSecondBuildIsIdentical builds again from scratch (fresh work folder) and expects the same digests
// and the same archive bytes.
func TestSecondBuildIsIdentical(t *testing.T) {
	second := filepath.Join(t.TempDir(), "second")
	if err := buildRelease(second); err != nil {
		t.Fatal(err)
	}
	first, again := digest(t, imageIndex(t, filepath.Join(release, "image"))), digest(t, imageIndex(t, filepath.Join(second, "image")))
	if first != again {
		t.Errorf("index digest of the second build = %s, first %s; want the same", again, first)
	}
	if a, b := fileSum(t, filepath.Join(release, "lathe-image.tar")), fileSum(t, filepath.Join(second, "lathe-image.tar")); a != b {
		t.Errorf("lathe-image.tar differs between builds: %x, %x", a, b)
	}
}

func TestBuildRejectsAMissingStamp(t *testing.T) {
	for name, cfg := range map[string]ociimage.Config{
		"no version": {Commit: commit, Created: created, CABundle: caBundle},
		"no commit":  {Version: version, Created: created, CABundle: caBundle},
		"no time":    {Version: version, Commit: commit, CABundle: caBundle},
		"no bundle":  {Version: version, Commit: commit, Created: created, CABundle: filepath.Join(t.TempDir(), "missing.crt")},
	} {
		if _, err := ociimage.Build(context.Background(), cfg); err == nil {
			t.Errorf("%s: Build succeeded, want an error", name)
		}
	}
}

func digest(t *testing.T, index v1.ImageIndex) v1.Hash {
	t.Helper()
	h, err := index.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

func keys(m map[string]entry) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
