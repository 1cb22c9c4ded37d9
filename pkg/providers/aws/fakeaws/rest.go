package fakeaws

import (
	"encoding/json"
	"net/http"
	"strings"
)

// restRoute answers a REST-JSON call (EKS) whose path starts with prefix; rest is the path after it.
type restRoute struct {
	method, prefix, operation string
	handle                    func(s *Server, rest string, r *http.Request) (any, error)
}

var restRoutes []restRoute

// handleREST registers a REST-JSON route; areas call it from init functions.
func handleREST(method, prefix, operation string, h func(s *Server, rest string, r *http.Request) (any, error)) {
	restRoutes = append(restRoutes, restRoute{method: method, prefix: prefix, operation: operation, handle: h})
}

func (s *Server) serveREST(w http.ResponseWriter, r *http.Request, service string) {
	requestID := s.nextRequestID()
	w.Header().Set("X-Amzn-RequestId", requestID)
	w.Header().Set("Content-Type", "application/json")
	fail := func(e *apiError) {
		w.Header().Set("X-Amzn-ErrorType", e.Code)
		w.WriteHeader(e.Status)
		json.NewEncoder(w).Encode(map[string]string{"message": e.Message})
	}
	for _, route := range restRoutes {
		rest, ok := strings.CutPrefix(r.URL.Path, route.prefix)
		if !ok || r.Method != route.method {
			continue
		}
		if e := s.faults.before(r.Context(), service, route.operation); e != nil {
			fail(e)
			return
		}
		if e := s.authorizeREST(r, service, route.operation, rest); e != nil {
			fail(e)
			return
		}
		out, err := route.handle(s, rest, r)
		if err != nil {
			fail(asAPIError(err))
			return
		}
		json.NewEncoder(w).Encode(out)
		return
	}
	fail(notFoundf("NotFoundException", "fakeaws does not fake %s %s", r.Method, r.URL.Path))
}
