package fakeaws

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// queryHandler answers one Query-protocol action (EC2, IAM). It returns the response's body as a struct
// whose fields carry xml tags with the service's element names (EC2: lowerCamel, lists as <xSet><item>;
// IAM: UpperCamel, lists as <member>); the protocol adds the envelope and request ID.
type queryHandler func(s *Server, q query) (any, error)

// queryProtocol is EC2's or IAM's flavour of the Query protocol.
type queryProtocol struct {
	name     string
	xmlns    string
	handlers map[string]queryHandler
	// envelope wraps a marshalled body in the service's response document.
	envelope func(action, xmlns, requestID string, body []byte) []byte
	// errorDoc is the service's error document.
	errorDoc func(e *apiError, requestID string) []byte
}

var (
	ec2Protocol = &queryProtocol{
		name: "ec2", xmlns: "http://ec2.amazonaws.com/doc/2016-11-15/", handlers: map[string]queryHandler{},
		envelope: func(action, xmlns, requestID string, body []byte) []byte {
			var b bytes.Buffer
			fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<%sResponse xmlns="%s"><requestId>%s</requestId>`, action, xmlns, requestID)
			b.Write(body)
			fmt.Fprintf(&b, "</%sResponse>", action)
			return b.Bytes()
		},
		errorDoc: func(e *apiError, requestID string) []byte {
			var b bytes.Buffer
			b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<Response><Errors><Error><Code>")
			xml.EscapeText(&b, []byte(e.Code))
			b.WriteString("</Code><Message>")
			xml.EscapeText(&b, []byte(e.Message))
			fmt.Fprintf(&b, "</Message></Error></Errors><RequestID>%s</RequestID></Response>", requestID)
			return b.Bytes()
		},
	}
	iamProtocol = &queryProtocol{
		name: "iam", xmlns: "https://iam.amazonaws.com/doc/2010-05-08/", handlers: map[string]queryHandler{},
		envelope: func(action, xmlns, requestID string, body []byte) []byte {
			var b bytes.Buffer
			fmt.Fprintf(&b, `<%sResponse xmlns="%s"><%sResult>`, action, xmlns, action)
			b.Write(body)
			fmt.Fprintf(&b, "</%sResult><ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></%sResponse>", action, requestID, action)
			return b.Bytes()
		},
		errorDoc: func(e *apiError, requestID string) []byte {
			var b bytes.Buffer
			kind := "Sender"
			if e.Status >= 500 {
				kind = "Receiver"
			}
			fmt.Fprintf(&b, "<ErrorResponse><Error><Type>%s</Type><Code>", kind)
			xml.EscapeText(&b, []byte(e.Code))
			b.WriteString("</Code><Message>")
			xml.EscapeText(&b, []byte(e.Message))
			fmt.Fprintf(&b, "</Message></Error><RequestId>%s</RequestId></ErrorResponse>", requestID)
			return b.Bytes()
		},
	}
)

// handleEC2 and handleIAM register an action's handler; areas call them from init functions.
func handleEC2(action string, h queryHandler) { ec2Protocol.handlers[action] = h }
func handleIAM(action string, h queryHandler) { iamProtocol.handlers[action] = h }

func (s *Server) serveQuery(w http.ResponseWriter, r *http.Request, service string, p *queryProtocol) {
	requestID := s.nextRequestID()
	fail := func(e *apiError) {
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(e.Status)
		w.Write(p.errorDoc(e, requestID))
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		fail(errorf("InvalidRequest", "reading the request body: %v", err))
		return
	}
	values, err := url.ParseQuery(string(body))
	if err != nil {
		fail(errorf("MalformedQueryString", "%v", err))
		return
	}
	q := query{}
	for k, vs := range values {
		q[k] = vs[0]
	}
	action := q["Action"]
	if e := s.faults.before(r.Context(), service, action); e != nil {
		fail(e)
		return
	}
	h, ok := p.handlers[action]
	if !ok {
		fail(errorf("InvalidAction", "the action %s is not valid for this web service (fakeaws does not fake %s.%s)", action, service, action))
		return
	}
	if e := s.authorizeQuery(r, service, action, q); e != nil {
		fail(e)
		return
	}
	out, err := h(s, q)
	if err != nil {
		fail(asAPIError(err))
		return
	}
	inner, err := marshalInner(out)
	if err != nil {
		fail(asAPIError(fmt.Errorf("encoding the %s response, %w", action, err)))
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Write(p.envelope(action, p.xmlns, requestID, inner))
}

// marshalInner marshals v and strips its outermost element, leaving the fields' elements.
func marshalInner(v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	b, err := xml.Marshal(v)
	if err != nil {
		return nil, err
	}
	start := bytes.IndexByte(b, '>')
	end := bytes.LastIndexByte(b, '<')
	if start < 0 || end <= start {
		return nil, nil
	}
	return b[start+1 : end], nil
}

// query is a Query-protocol request's parameters. Lists are flattened with 1-based indexes:
// Filter.1.Name, Filter.1.Value.1, InstanceId.1, LaunchTemplateConfigs.1.Overrides.2.InstanceType.
type query map[string]string

// Strings returns the scalar list under prefix (prefix.1, prefix.2, ...), in index order.
func (q query) Strings(prefix string) []string {
	var out []string
	for _, i := range q.indexes(prefix) {
		if v, ok := q[prefix+"."+strconv.Itoa(i)]; ok {
			out = append(out, v)
		}
	}
	return out
}

// List returns the structures under prefix (prefix.1.*, prefix.2.*, ...), each with its keys relative to
// it, in index order.
func (q query) List(prefix string) []query {
	var out []query
	for _, i := range q.indexes(prefix) {
		out = append(out, q.Sub(prefix+"."+strconv.Itoa(i)))
	}
	return out
}

// Sub returns the structure under prefix (prefix.*) with its keys relative to it.
func (q query) Sub(prefix string) query {
	sub := query{}
	for k, v := range q {
		if rest, ok := strings.CutPrefix(k, prefix+"."); ok {
			sub[rest] = v
		}
	}
	return sub
}

// Int returns the integer parameter, or def when it is absent; a malformed value is an error.
func (q query) Int(key string, def int) (int, error) {
	v, ok := q[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, errorf("InvalidParameterValue", "%s must be an integer, got %q", key, v)
	}
	return n, nil
}

func (q query) indexes(prefix string) []int {
	seen := map[int]bool{}
	for k := range q {
		rest, ok := strings.CutPrefix(k, prefix+".")
		if !ok {
			continue
		}
		head, _, _ := strings.Cut(rest, ".")
		if n, err := strconv.Atoi(head); err == nil {
			seen[n] = true
		}
	}
	out := make([]int, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}
