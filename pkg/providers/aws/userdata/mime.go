package userdata

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"net/textproto"
	"strings"
)

const (
	boundary = "//"
	// contentTypeShell is a cloud-init shell script part.
	contentTypeShell = `text/x-shellscript; charset="us-ascii"`
	// contentTypeNodeConfig is a nodeadm NodeConfig part.
	contentTypeNodeConfig = "application/node.eks.aws"
)

// part is one part of a MIME multipart user data document.
type part struct {
	ContentType string
	Content     string
}

// isMIME says whether user data is a MIME document rather than a bare script or config, as upstream decides.
func isMIME(doc string) bool {
	trimmed := strings.TrimSpace(doc)
	return strings.HasPrefix(trimmed, "MIME-Version:") || strings.HasPrefix(trimmed, "Content-Type:")
}

// readParts reads the parts of a MIME multipart document.
func readParts(doc string) ([]part, error) {
	msg, err := mail.ReadMessage(strings.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("reading MIME headers, %w", err)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return nil, fmt.Errorf("reading the MIME Content-Type header, %w", err)
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		return nil, fmt.Errorf("MIME document is %s, not multipart", mediaType)
	}
	if params["boundary"] == "" {
		return nil, fmt.Errorf("MIME multipart document has no boundary")
	}
	reader := multipart.NewReader(msg.Body, params["boundary"])
	var parts []part
	for {
		p, err := reader.NextPart()
		if errors.Is(err, io.EOF) {
			return parts, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading MIME part %d, %w", len(parts)+1, err)
		}
		content, err := io.ReadAll(p)
		if err != nil {
			return nil, fmt.Errorf("reading MIME part %d, %w", len(parts)+1, err)
		}
		parts = append(parts, part{ContentType: p.Header.Get("Content-Type"), Content: string(content)})
	}
}

// writeParts writes a MIME multipart document with LF line endings.
func writeParts(parts []part) (string, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary(boundary); err != nil {
		return "", fmt.Errorf("setting the MIME boundary, %w", err)
	}
	fmt.Fprintf(&buf, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=%q\n\n", boundary)
	for _, p := range parts {
		pw, err := w.CreatePart(textproto.MIMEHeader{"Content-Type": {p.ContentType}})
		if err != nil {
			return "", fmt.Errorf("writing a MIME part, %w", err)
		}
		if _, err := io.WriteString(pw, p.Content); err != nil {
			return "", fmt.Errorf("writing a MIME part, %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("closing the MIME document, %w", err)
	}
	return strings.ReplaceAll(buf.String(), "\r", ""), nil
}

// mediaType is the media type of a part's Content-Type, lower case, without parameters.
func mediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(contentType))
	}
	return mt
}
