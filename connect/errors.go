package connect

import (
	"errors"
	"time"
)

// BadRecordError marks an error as caused by one record: retrying cannot
// help, and the worker dead-letters the record or fails the task, as the
// pipeline's error tolerance says. When an error is marked both bad-record
// and retryable, bad record wins. The marker keeps the message of the
// error it wraps.
type BadRecordError struct {
	// Index is the position of the bad record in the batch given to
	// Sink.Write, or -1 when unknown. With an index, the records before it
	// were delivered: the worker dead-letters the record at Index and
	// writes the rest again. Without one, the worker writes the batch one
	// record at a time to find the bad ones.
	Index int
	// Err is what went wrong.
	Err error
}

// Error returns the message of the wrapped error.
func (e *BadRecordError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *BadRecordError) Unwrap() error { return e.Err }

// BadRecord marks err as caused by the record being processed (a record that
// can never succeed and should be dead-lettered). It returns nil for nil.
func BadRecord(err error) error {
	if err == nil {
		return nil
	}
	return &BadRecordError{Index: -1, Err: err}
}

// BadRecordAt marks err as caused by records[index] of the batch given to
// Sink.Write, and says that the records before it were delivered. It
// returns nil for nil.
func BadRecordAt(index int, err error) error {
	if err == nil {
		return nil
	}
	return &BadRecordError{Index: index, Err: err}
}

// IsBadRecord reports whether err, or an error it wraps, was marked as a bad
// record.
func IsBadRecord(err error) bool {
	var bre *BadRecordError
	return errors.As(err, &bre)
}

// RetryableError marks an error as transient (a timeout, a 503, a lost
// connection): the worker backs off and retries the call. The marker keeps
// the message of the error it wraps.
type RetryableError struct {
	// After is how long to wait before retrying, when the other side said
	// (an HTTP Retry-After); 0 leaves the backoff to the worker.
	After time.Duration
	// Err is what went wrong.
	Err error
}

// Error returns the message of the wrapped error.
func (e *RetryableError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *RetryableError) Unwrap() error { return e.Err }

// Retryable marks err as transient: the worker retries the call with
// backoff. It returns nil for nil.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return &RetryableError{Err: err}
}

// RetryAfter marks err as transient and asks the worker to wait at least d
// before retrying. It returns nil for nil.
func RetryAfter(d time.Duration, err error) error {
	if err == nil {
		return nil
	}
	return &RetryableError{After: d, Err: err}
}

// IsRetryable reports whether err should be retried: it, or an error it
// wraps, was marked Retryable, and it is neither a bad record nor
// permanent.
func IsRetryable(err error) bool {
	var re *RetryableError
	return errors.As(err, &re) && !IsBadRecord(err) && !IsPermanent(err)
}

// PermanentError marks an error that retrying cannot cure: a setup or
// configuration error the user must fix (logical replication is off, the
// database or role does not exist, a grant is missing). When Open, Read or
// Write fails with it, the worker marks the task FAILED with the error as
// its trace and does not restart it until the user restarts or resumes the
// connector, as Kafka Connect leaves a failed task. A permanent error is
// never retried, even when it is also marked Retryable; a bad record still
// wins over it in a sink (with errors tolerance all the record is
// dead-lettered; with none, a bad record also marked Permanent leaves the
// task FAILED without restarts, where another one restarts it). The marker
// keeps the message of the error it wraps.
type PermanentError struct {
	// Err is what went wrong.
	Err error
}

// Error returns the message of the wrapped error.
func (e *PermanentError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent marks err as one that retrying cannot cure: the worker stops
// the task and waits for the user. It returns nil for nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// IsPermanent reports whether err, or an error it wraps, was marked
// Permanent, and it is not a bad record.
func IsPermanent(err error) bool {
	var pe *PermanentError
	return errors.As(err, &pe) && !IsBadRecord(err)
}

// AttemptsError says how many times the connector tried an operation
// itself before it returned the error it wraps, e.g. a sink that retries
// HTTP deliveries and gives up after max.attempts. The worker counts those
// tries in the __connect.errors.attempts header of a dead-lettered record,
// so the header agrees with the message. The marker keeps the message of
// the error it wraps, and combines with the other markers in any order.
type AttemptsError struct {
	// Attempts is the number of tries made, at least 1.
	Attempts int
	// Err is what went wrong.
	Err error
}

// Error returns the message of the wrapped error.
func (e *AttemptsError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *AttemptsError) Unwrap() error { return e.Err }

// WithAttempts records that err came after n tries. It returns nil for
// nil, and err unchanged for n < 1.
func WithAttempts(n int, err error) error {
	if err == nil || n < 1 {
		return err
	}
	return &AttemptsError{Attempts: n, Err: err}
}

// Attempts returns the number of tries err says were made (the outermost
// WithAttempts), or 0 when it does not say.
func Attempts(err error) int {
	var ae *AttemptsError
	if errors.As(err, &ae) {
		return ae.Attempts
	}
	return 0
}
