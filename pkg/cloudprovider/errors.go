package cloudprovider

import (
	"errors"
	"fmt"
)

// NodeClaimNotFoundError means the instance behind a NodeClaim doesn't exist (any more).
type NodeClaimNotFoundError struct{ err error }

// NewNodeClaimNotFoundError wraps err as a NodeClaimNotFoundError.
func NewNodeClaimNotFoundError(err error) *NodeClaimNotFoundError {
	return &NodeClaimNotFoundError{err: err}
}

func (e *NodeClaimNotFoundError) Error() string { return fmt.Sprintf("nodeclaim not found, %s", e.err) }
func (e *NodeClaimNotFoundError) Unwrap() error { return e.err }

// IsNodeClaimNotFoundError reports whether err is or wraps a NodeClaimNotFoundError.
func IsNodeClaimNotFoundError(err error) bool {
	var target *NodeClaimNotFoundError
	return errors.As(err, &target)
}

// IgnoreNodeClaimNotFoundError returns nil for a NodeClaimNotFoundError and err otherwise.
func IgnoreNodeClaimNotFoundError(err error) error {
	if IsNodeClaimNotFoundError(err) {
		return nil
	}
	return err
}

// InsufficientCapacityError means no offering the NodeClaim allows had capacity.
type InsufficientCapacityError struct{ err error }

// NewInsufficientCapacityError wraps err as an InsufficientCapacityError.
func NewInsufficientCapacityError(err error) *InsufficientCapacityError {
	return &InsufficientCapacityError{err: err}
}

func (e *InsufficientCapacityError) Error() string {
	return fmt.Sprintf("insufficient capacity, %s", e.err)
}
func (e *InsufficientCapacityError) Unwrap() error { return e.err }

// IsInsufficientCapacityError reports whether err is or wraps an InsufficientCapacityError.
func IsInsufficientCapacityError(err error) bool {
	var target *InsufficientCapacityError
	return errors.As(err, &target)
}

// IgnoreInsufficientCapacityError returns nil for an InsufficientCapacityError and err otherwise.
func IgnoreInsufficientCapacityError(err error) error {
	if IsInsufficientCapacityError(err) {
		return nil
	}
	return err
}

// NodeClassNotReadyError means the NodePool's node class isn't resolved yet (subnets, AMIs, ...).
type NodeClassNotReadyError struct{ err error }

// NewNodeClassNotReadyError wraps err as a NodeClassNotReadyError.
func NewNodeClassNotReadyError(err error) *NodeClassNotReadyError {
	return &NodeClassNotReadyError{err: err}
}

func (e *NodeClassNotReadyError) Error() string { return fmt.Sprintf("nodeclass not ready, %s", e.err) }
func (e *NodeClassNotReadyError) Unwrap() error { return e.err }

// IsNodeClassNotReadyError reports whether err is or wraps a NodeClassNotReadyError.
func IsNodeClassNotReadyError(err error) bool {
	var target *NodeClassNotReadyError
	return errors.As(err, &target)
}

// IgnoreNodeClassNotReadyError returns nil for a NodeClassNotReadyError and err otherwise.
func IgnoreNodeClassNotReadyError(err error) error {
	if IsNodeClassNotReadyError(err) {
		return nil
	}
	return err
}

// CreateError is a launch failure with a machine-readable reason and a message for the NodeClaim's
// Launched condition.
type CreateError struct {
	err                      error
	ConditionReason, Message string
}

// NewCreateError wraps err with the condition reason and message to surface.
func NewCreateError(err error, reason, message string) *CreateError {
	return &CreateError{err: err, ConditionReason: reason, Message: message}
}

func (e *CreateError) Error() string { return fmt.Sprintf("creating nodeclaim, %s", e.err) }
func (e *CreateError) Unwrap() error { return e.err }

// IsCreateError reports whether err is or wraps a CreateError.
func IsCreateError(err error) bool {
	var target *CreateError
	return errors.As(err, &target)
}

// IgnoreCreateError returns nil for a CreateError and err otherwise.
func IgnoreCreateError(err error) error {
	if IsCreateError(err) {
		return nil
	}
	return err
}
