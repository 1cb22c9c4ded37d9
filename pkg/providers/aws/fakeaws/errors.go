package fakeaws

import (
	"fmt"
	"net/http"
)

// apiError is an error answer: the service's error code, a message and the HTTP status it comes with.
type apiError struct {
	Code    string
	Message string
	Status  int
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

// errorf returns a client error (HTTP 400) with the code.
func errorf(code, format string, args ...any) *apiError {
	return &apiError{Code: code, Message: fmt.Sprintf(format, args...), Status: http.StatusBadRequest}
}

// notFoundf returns an error with HTTP status 404, as IAM and EKS answer for a missing resource.
func notFoundf(code, format string, args ...any) *apiError {
	return &apiError{Code: code, Message: fmt.Sprintf(format, args...), Status: http.StatusNotFound}
}

// asAPIError turns any handler error into an apiError (an unexpected one is an internal error).
func asAPIError(err error) *apiError {
	if e, ok := err.(*apiError); ok {
		return e
	}
	return &apiError{Code: "InternalError", Message: err.Error(), Status: http.StatusInternalServerError}
}
