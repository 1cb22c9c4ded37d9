package sdkhttp_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/sdkhttp"
)

// heldConn lets its first write (the request's headers) through, reports the second (the body, already
// read from the request) and holds it until release is closed.
type heldConn struct {
	net.Conn
	writes      int
	bodyRead    chan struct{}
	release     chan struct{}
	reportFirst sync.Once
}

func (c *heldConn) Write(p []byte) (int, error) {
	c.writes++
	if c.writes > 1 {
		c.reportFirst.Do(func() { close(c.bodyRead) })
		<-c.release
	}
	return c.Conn.Write(p)
}

// TestTheSDKClosingABodyBeingWrittenLeavesTheResponseReadable: the service answers before the request's
// body is on the wire; the SDK's own handler closes the body as soon as Do returns, and only then does
// net/http finish writing it. The write must not fail, and the response must be read to the end on the
// same connection.
func TestTheSDKClosingABodyBeingWrittenLeavesTheResponseReadable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func(*http.Transport) aws.HTTPClient
	}{
		{"wrapped client", func(tr *http.Transport) aws.HTTPClient { return sdkhttp.Wrap(&http.Client{Transport: tr}) }},
		{"wrapped config", func(tr *http.Transport) aws.HTTPClient {
			return sdkhttp.Config(aws.Config{HTTPClient: &http.Client{Transport: tr}}).HTTPClient
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bodyRead, release := make(chan struct{}), make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
					t.Error(err)
				}
				<-bodyRead
				io.WriteString(w, "answer:")
				w.(http.Flusher).Flush()
				<-release
				body, _ := io.ReadAll(r.Body)
				w.Write(body)
			}))
			defer srv.Close()
			tr := srv.Client().Transport.(*http.Transport).Clone()
			dial := tr.DialContext
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := dial(ctx, network, addr)
				return &heldConn{Conn: c, bodyRead: bodyRead, release: release}, err
			}
			wrote := make(chan error, 1)
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
				WroteRequest: func(i httptrace.WroteRequestInfo) { wrote <- i.Err }})

			req := smithyhttp.NewStackRequest().(*smithyhttp.Request)
			u, _ := url.Parse(srv.URL)
			req.URL, req.Method, req.ContentLength = u, http.MethodPost, int64(len("request"))
			req, err := req.SetStream(strings.NewReader("request"))
			if err != nil {
				t.Fatal(err)
			}
			out, _, err := smithyhttp.NewClientHandler(tc.client(tr)).Handle(ctx, req)
			close(release)
			if err != nil {
				t.Fatal(err)
			}
			resp := out.(*smithyhttp.Response)
			defer resp.Body.Close()
			if err := <-wrote; err != nil {
				t.Errorf("writing the request failed after the SDK closed its body: %v", err)
			}
			if got, err := io.ReadAll(resp.Body); err != nil || string(got) != "answer:request" {
				t.Errorf("read the response as %q, %v; want %q", got, err, "answer:request")
			}
		})
	}
}

// TestARequestWithoutBodyIsSentAsIs: http.NoBody stays itself, so net/http still sends no body.
func TestARequestWithoutBodyIsSentAsIs(t *testing.T) {
	var got *http.Request
	c := sdkhttp.Wrap(clientFunc(func(r *http.Request) (*http.Response, error) { got = r; return &http.Response{}, nil }))
	req, _ := http.NewRequest(http.MethodGet, "http://example.com", http.NoBody)
	if _, err := c.Do(req); err != nil {
		t.Fatal(err)
	}
	if got.Body != http.NoBody {
		t.Errorf("body sent as %T, want http.NoBody", got.Body)
	}
}

type clientFunc func(*http.Request) (*http.Response, error)

func (f clientFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }
