package ociimage

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Annotation keys on the layout's index.json entry that name the image: the OCI tag (what skopeo's
// "oci:dist/image:<tag>" and crane read) and the full reference (what containerd's "ctr images import" reads).
const (
	AnnotationRefName       = "org.opencontainers.image.ref.name"
	AnnotationContainerdRef = "io.containerd.image.name"
)

// WriteLayout replaces dir with an OCI image layout whose index.json holds one entry, the image index,
// named repository:tag.
func WriteLayout(index v1.ImageIndex, dir, repository, tag string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the old layout, %w", err)
	}
	path, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("creating the layout, %w", err)
	}
	err = path.AppendIndex(index, layout.WithAnnotations(map[string]string{
		AnnotationRefName:       tag,
		AnnotationContainerdRef: repository + ":" + tag,
	}))
	if err != nil {
		return fmt.Errorf("writing the image index to the layout, %w", err)
	}
	return nil
}

// WriteArchive writes the layout in dir as an uncompressed tarball (oci-layout, index.json, blobs/...) at
// path, every entry owned by root and dated created, in lexical order, so equal layouts give equal bytes.
// Tools that read OCI archives take it as is: skopeo's "oci-archive:<path>:<tag>" and "ctr images import".
func WriteArchive(dir, path string, created time.Time) (err error) {
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating %s, %w", path, err)
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing %s, %w", path, cerr)
		}
	}()
	tw := tar.NewWriter(out)
	// WalkDir visits entries in lexical order.
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		return addToArchive(tw, dir, p, d, created)
	})
	if err != nil {
		return fmt.Errorf("archiving %s, %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("closing %s, %w", path, err)
	}
	return nil
}

func addToArchive(tw *tar.Writer, root, p string, d fs.DirEntry, created time.Time) error {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: created.UTC().Truncate(time.Second), Format: tar.FormatUSTAR}
	if d.IsDir() {
		hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
		return tw.WriteHeader(hdr)
	}
	info, err := d.Info()
	if err != nil {
		return err
	}
	hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, info.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, f)
	return err
}
