package fakeaws

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"k8s.io/utils/clock"

	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/sdkhttp"
)

// Options configure a Server.
type Options struct {
	// Region the fake serves. Default us-east-1.
	Region string
	// Zones of the region. Default <region>a, <region>b, <region>c.
	Zones []string
	// Clock stamps what the fake records (spot price history, launch times). Default the real clock.
	Clock clock.Clock
	// EnforcePolicy, when set, answers as AWS does for a controller role holding only Karpenter's
	// getting-started controller policy for the cluster (policy.go).
	EnforcePolicy *KarpenterPolicy
}

func (o Options) withDefaults() Options {
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if len(o.Zones) == 0 {
		o.Zones = []string{o.Region + "a", o.Region + "b", o.Region + "c"}
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

// Server is the fake. Its zero value is not usable; call New. All methods are safe for concurrent use.
type Server struct {
	opts   Options
	faults faults
	reqID  atomic.Uint64

	// mu guards the state below. Handlers take it themselves (withState), so that one that waits (a fault's
	// latency, an instance booting) does not hold up the others.
	mu    sync.Mutex
	state state
}

// state is everything the fake remembers, one field per area of the API; each area's type is declared in
// that area's file.
type state struct {
	zones           zoneState
	network         networkState
	images          imageState
	iam             iamState
	instanceTypes   instanceTypeState
	pricing         pricingState
	launchTemplates launchTemplateState
	instances       instanceState
	eks             eksState
	sqs             sqsState
}

// New returns a fake serving opts.Region. Areas seed themselves from opts in their seed functions.
func New(opts Options) *Server {
	s := &Server{opts: opts.withDefaults()}
	for _, seed := range seeders {
		seed(s)
	}
	return s
}

// seeders fill the state of a new Server; each area registers its own from an init function.
var seeders []func(*Server)

// Region is the region the fake serves.
func (s *Server) Region() string { return s.opts.Region }

// Zones are the region's zones.
func (s *Server) Zones() []string { return append([]string(nil), s.opts.Zones...) }

// Faults injects failures into the fake's answers.
func (s *Server) Faults() *Faults { return &Faults{s: &s.faults} }

// credentialScope finds the service name in a SigV4 Authorization header.
var credentialScope = regexp.MustCompile(`Credential=[^/]+/[^/]+/[^/]+/([^/]+)/aws4_request`)

// ServeHTTP answers one AWS API call.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := credentialScope.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		http.Error(w, "fakeaws: request is not SigV4-signed; no service in the credential scope", http.StatusForbidden)
		return
	}
	switch service := m[1]; service {
	case "ec2":
		s.serveQuery(w, r, service, ec2Protocol)
	case "iam":
		s.serveQuery(w, r, service, iamProtocol)
	case "ssm", "pricing", "sqs":
		s.serveJSON(w, r, service)
	case "eks":
		s.serveREST(w, r, service)
	default:
		http.Error(w, fmt.Sprintf("fakeaws: service %q is not faked", service), http.StatusNotImplemented)
	}
}

// nextRequestID returns a request ID for a response.
func (s *Server) nextRequestID() string {
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", s.reqID.Add(1))
}

// Running is a Server listening on a loopback port.
type Running struct {
	*Server
	// URL is the endpoint, for example http://127.0.0.1:34567.
	URL string
	srv *httptest.Server
}

// Start serves s on a free loopback port until Close.
func (s *Server) Start() *Running {
	srv := httptest.NewServer(s)
	return &Running{Server: s, URL: srv.URL, srv: srv}
}

// Listen serves s on addr (host:port) until the listener is closed, for the standalone fake.
func (s *Server) Listen(addr string) (*Running, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s, %w", addr, err)
	}
	srv := httptest.NewUnstartedServer(s)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	return &Running{Server: s, URL: srv.URL, srv: srv}, nil
}

// Close stops serving.
func (r *Running) Close() { r.srv.Close() }

// AWSConfig returns an SDK configuration that sends every service's calls to the fake, with static
// credentials and the fake's region, and the HTTP client Lathe gives the SDK, as a test or `make run`
// would build it.
func (r *Running) AWSConfig() aws.Config {
	return sdkhttp.Config(aws.Config{
		Region:       r.opts.Region,
		Credentials:  credentials.NewStaticCredentialsProvider("AKIAFAKEAWSLATHE0000", "fake-secret", ""),
		BaseEndpoint: aws.String(r.URL),
		HTTPClient:   r.srv.Client(),
	})
}

// withState runs f with the state locked.
func (s *Server) withState(f func(*state)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.state)
}
