package job

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every error that refuses a request before any
// work: a bad parameter, an impossible budget, a run the budget file cannot
// afford. The command-line tool maps it to exit status 2.
var ErrInvalid = errors.New("invalid request")

// invalidError is a one-line message that wraps ErrInvalid (and, when err is
// set, err too).
type invalidError struct {
	msg string
	err error
}

func (e invalidError) Error() string { return e.msg }
func (e invalidError) Unwrap() []error {
	if e.err != nil {
		return []error{ErrInvalid, e.err}
	}
	return []error{ErrInvalid}
}

func invalidf(format string, a ...any) error { return invalidError{msg: fmt.Sprintf(format, a...)} }

// invalid marks err as a refused request, keeping its message and chain.
func invalid(err error) error { return invalidError{msg: err.Error(), err: err} }

// invalidWrapf is invalidf that also wraps err (for errors.Is).
func invalidWrapf(err error, format string, a ...any) error {
	return invalidError{msg: fmt.Sprintf(format, a...), err: err}
}
