package frametest

import (
	"errors"
	"fmt"

	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// Error is a failed call's BrokerError as a Go error.
type Error struct{ BrokerError *rlmmpb.BrokerError }

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", e.BrokerError.GetKind(), e.BrokerError.GetMessage())
}

// Kind is the kind of the error's BrokerError.
func (e *Error) Kind() rlmmpb.ErrorKind { return e.BrokerError.GetKind() }

// Kind is the kind of err's BrokerError, or ERROR_KIND_UNSPECIFIED when err
// carries none.
func Kind(err error) rlmmpb.ErrorKind {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Kind()
	}
	return rlmmpb.ErrorKind_ERROR_KIND_UNSPECIFIED
}
