package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// nonroot is the user the image runs as (User); its home is the only folder it owns.
const nonroot = 65532

// passwd and group name root and nonroot, like distroless' static base, so tools that resolve the user
// by name (and Go's os/user) find it.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group  = "root:x:0:\nnonroot:x:65532:\n"
)

// file is one entry of the layer: a folder when data is nil.
type file struct {
	name     string
	mode     int64
	uid, gid int
	data     []byte
}

// files lists the layer's entries in the order they are written, parents before children.
func files(binary, bundle []byte) []file {
	return []file{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: strings.TrimPrefix(CABundlePath, "/"), mode: 0o644, data: bundle},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: nonroot, gid: nonroot},
		{name: strings.TrimPrefix(Entrypoint, "/"), mode: 0o755, data: binary},
		{name: "tmp/", mode: 0o1777},
	}
}

// newLayer writes files into an uncompressed tar with every timestamp set to created and returns it as a
// gzip-compressed OCI layer.
func newLayer(entries []file, created time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range entries {
		hdr := &tar.Header{
			Name:    f.name,
			Mode:    f.mode,
			Uid:     f.uid,
			Gid:     f.gid,
			ModTime: created.UTC().Truncate(time.Second),
			Format:  tar.FormatUSTAR,
		}
		if f.data == nil {
			hdr.Typeflag = tar.TypeDir
		} else {
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(f.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("writing %s, %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("writing %s, %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing the layer, %w", err)
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

// readCABundle reads the CA bundle the image carries and checks it holds certificates.
func readCABundle(path string) ([]byte, error) {
	if path == "" {
		return nil, fmt.Errorf("reading the CA bundle, no path given")
	}
	bundle, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the CA bundle, %w", err)
	}
	if !bytes.Contains(bundle, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("reading the CA bundle, %s holds no PEM certificate", path)
	}
	return bundle, nil
}
