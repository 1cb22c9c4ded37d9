package fakeaws

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// jsonHandler answers one JSON 1.1 (SSM, Pricing) or 1.0 (SQS) operation: it decodes the request body itself and
// returns a value encoding/json marshals as the response (field names as the service spells them).
type jsonHandler func(s *Server, body []byte) (any, error)

// jsonHandlers are keyed by X-Amz-Target, for example "AmazonSSM.GetParameter".
var jsonHandlers = map[string]jsonHandler{}

// handleJSON registers a JSON operation's handler; areas call it from init functions.
func handleJSON(target string, h jsonHandler) { jsonHandlers[target] = h }

// jsonWaitingHandler is a jsonHandler that may wait (SQS long polling) until ctx, the request's, ends.
type jsonWaitingHandler func(s *Server, ctx context.Context, body []byte) (any, error)

// jsonWaitingHandlers are keyed by X-Amz-Target, as jsonHandlers.
var jsonWaitingHandlers = map[string]jsonWaitingHandler{}

// handleJSONWaiting registers a JSON operation's handler that may wait.
func handleJSONWaiting(target string, h jsonWaitingHandler) { jsonWaitingHandlers[target] = h }

// jsonContentTypes are the services that speak JSON 1.0 rather than 1.1.
var jsonContentTypes = map[string]string{"sqs": "application/x-amz-json-1.0"}

func jsonContentType(service string) string {
	if t, ok := jsonContentTypes[service]; ok {
		return t
	}
	return "application/x-amz-json-1.1"
}

func (s *Server) serveJSON(w http.ResponseWriter, r *http.Request, service string) {
	requestID := s.nextRequestID()
	w.Header().Set("X-Amzn-RequestId", requestID)
	fail := func(e *apiError) {
		w.Header().Set("Content-Type", jsonContentType(service))
		w.Header().Set("X-Amzn-ErrorType", e.Code)
		w.WriteHeader(e.Status)
		json.NewEncoder(w).Encode(map[string]string{"__type": e.Code, "message": e.Message})
	}
	target := r.Header.Get("X-Amz-Target")
	_, op, _ := strings.Cut(target, ".")
	if e := s.faults.before(r.Context(), service, op); e != nil {
		fail(e)
		return
	}
	h, ok := jsonHandlers[target]
	if waiting, found := jsonWaitingHandlers[target]; found {
		h, ok = func(s *Server, body []byte) (any, error) { return waiting(s, r.Context(), body) }, true
	}
	if !ok {
		fail(errorf("UnknownOperationException", "fakeaws does not fake %s", target))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		fail(errorf("SerializationException", "reading the request body: %v", err))
		return
	}
	if e := s.authorizeJSON(r, service, op, body); e != nil {
		fail(e)
		return
	}
	out, err := h(s, body)
	if err != nil {
		fail(asAPIError(err))
		return
	}
	w.Header().Set("Content-Type", jsonContentType(service))
	json.NewEncoder(w).Encode(out)
}

// decodeJSON decodes a request body into v, as a ValidationException when it doesn't fit.
func decodeJSON(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return errorf("SerializationException", "decoding the request: %v", err)
	}
	return nil
}
