package sdkhttp

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Wrap returns next with request bodies that net/http drains through Read only; nil stands for the
// SDK's default client.
func Wrap(next aws.HTTPClient) aws.HTTPClient {
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	if _, done := next.(client); done {
		return next
	}
	return client{next: next}
}

// Config is cfg with its HTTP client wrapped.
func Config(cfg aws.Config) aws.Config {
	cfg.HTTPClient = Wrap(cfg.HTTPClient)
	return cfg
}

type client struct{ next aws.HTTPClient }

// Do sends a copy of r whose body hides any WriteTo method: io.Copy then drains it with Read, which
// reads a closed SDK body as a plain end of stream.
func (c client) Do(r *http.Request) (*http.Response, error) {
	if _, ok := r.Body.(io.WriterTo); ok && r.Body != http.NoBody {
		r = r.Clone(r.Context())
		r.Body = readOnly{r.Body}
	}
	return c.next.Do(r)
}

// readOnly is a request body with only Read and Close.
type readOnly struct{ io.ReadCloser }
