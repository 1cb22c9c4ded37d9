package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

const (
	// readyPollInterval is how often a readiness endpoint is asked again.
	readyPollInterval = 100 * time.Millisecond
	// readyRequestTimeout bounds one readiness request.
	readyRequestTimeout = 5 * time.Second
)

// readyClient returns an HTTP client that trusts the cluster CA and presents the given client
// certificate, for the readiness endpoints of the components.
func readyClient(p *pki, client keyPair) (*http.Client, error) {
	cert, err := tls.X509KeyPair(client.certPEM, client.keyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading client certificate, %w", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(p.caCert)
	return &http.Client{
		Timeout: readyRequestTimeout,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
			// Never go through a proxy from the environment for loopback endpoints.
			Proxy: nil,
		},
	}, nil
}

// statusCheck is a readiness check that passes when url answers GET with one of the accepted codes.
func statusCheck(client *http.Client, url string, accepted ...int) func(context.Context) error {
	if len(accepted) == 0 {
		accepted = []int{http.StatusOK}
	}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("building request for %s, %w", url, err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("requesting %s, %w", url, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		for _, code := range accepted {
			if resp.StatusCode == code {
				return nil
			}
		}
		return fmt.Errorf("requesting %s, status %d: %s", url, resp.StatusCode, body)
	}
}

// waitFor polls check until it passes, timeout elapses, ctx ends, or one of the watched processes exits.
func waitFor(ctx context.Context, what string, timeout time.Duration, check func(context.Context) error, watched ...*Process) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, readyPollInterval, true, func(ctx context.Context) (bool, error) {
		for _, p := range watched {
			select {
			case <-p.Done():
				return false, p.exitError()
			default:
			}
		}
		last = check(ctx)
		return last == nil, nil
	})
	if err == nil {
		return nil
	}
	if wait.Interrupted(err) && last != nil {
		err = errors.Join(err, last)
	}
	return fmt.Errorf("waiting for %s, %w", what, err)
}
