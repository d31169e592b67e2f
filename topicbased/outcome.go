package topicbased

import "errors"

// mayBeRecordedError marks a mutation's error that came after its event was
// handed to the log, so the event may be (or already is) in the log and
// will be applied wherever its metadata partition is consumed: a publish
// that timed out or failed, a close or an unassignment while waiting for
// the pump, a timeout waiting for it. Everything refused before publishing
// (validation, a forbidden transition, a metadata partition not consumed
// here or not ready, a closed manager) and a verdict of the state machine
// on the applied event are not marked: their event is not recorded.
type mayBeRecordedError struct{ err error }

func (e *mayBeRecordedError) Error() string { return e.err.Error() }

func (e *mayBeRecordedError) Unwrap() error { return e.err }

// mayBeRecorded marks err (nil stays nil).
func mayBeRecorded(err error) error {
	if err == nil {
		return nil
	}
	return &mayBeRecordedError{err: err}
}

// MayBeRecorded reports whether a mutation's error leaves its event possibly
// in the log, where it may still take effect (see the mutation methods).
// false means nothing was recorded: retrying the same mutation is safe. A
// nil error is false.
func MayBeRecorded(err error) bool {
	var m *mayBeRecordedError
	return errors.As(err, &m)
}
