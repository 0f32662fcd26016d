// Package nferr is nicflow's error vocabulary: every error that leaves a
// package says who is at fault (its Kind), so that the CLI, the network
// protocols and the tests can react to the blame rather than to the text.
//
// INVARIANT: a Kind survives the network. Encode/Decode turn an error into a
// (kind, message) pair and back, so a "bad data" error raised on a storage node
// is still KindData when the client prints it.
package nferr

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"google.golang.org/grpc/codes"
)

// Kind says who is at fault for an error.
type Kind uint8

const (
	// KindInternal is a bug in nicflow. It is the zero value so that an
	// unclassified error is treated as our fault, never the user's.
	KindInternal Kind = iota
	// KindQuery is a bad query: syntax, unknown names, wrong types, a
	// query too large or nested too deeply for the limits.
	KindQuery
	// KindData is bad input data: a malformed or corrupt file, a row that does
	// not parse, a checksum mismatch, a garbage network frame, and errors
	// evaluating expressions over the data (division by zero, overflow, a
	// value that does not cast: SQL's data exceptions).
	KindData
	// KindResource is an exhausted resource: memory budget, disk, limits.
	KindResource
	// KindUnavailable is a remote node or service that cannot be reached or
	// died: the query may succeed when retried elsewhere.
	KindUnavailable
	// KindCanceled is a query canceled by the user or a deadline.
	KindCanceled
	// KindIO is a local I/O failure (permission denied, disk error).
	KindIO
	// KindAuth is a failed authentication or authorization (cluster key, TLS).
	KindAuth
	// KindBusy is a resource another process holds (a database opened by
	// another process, a benchmark's emulated hosts in use): retry later.
	KindBusy
	numKinds
)

var kindNames = [...]string{
	KindInternal:    "internal error",
	KindQuery:       "query error",
	KindData:        "data error",
	KindResource:    "resource exhausted",
	KindUnavailable: "node unavailable",
	KindCanceled:    "canceled",
	KindIO:          "i/o error",
	KindAuth:        "authentication error",
	KindBusy:        "busy",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Error is an error with a Kind. Msg is the complete human message (it
// already includes positions, names of files or operators, and the text of
// Cause when there is one); Cause, when set, is reachable through
// errors.Unwrap.
type Error struct {
	Kind  Kind
	Msg   string
	Cause error
}

func (e *Error) Error() string { return e.Msg }

func (e *Error) Unwrap() error { return e.Cause }

func newf(k Kind, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &Error{Kind: k, Msg: err.Error(), Cause: errors.Unwrap(err)}
}

// Internalf, Queryf, Dataf, Resourcef, Unavailablef, IOf and Authf build an
// *Error of their kind; %w in the format keeps the wrapped error reachable.
func Internalf(format string, args ...any) error    { return newf(KindInternal, format, args...) }
func Queryf(format string, args ...any) error       { return newf(KindQuery, format, args...) }
func Dataf(format string, args ...any) error        { return newf(KindData, format, args...) }
func Resourcef(format string, args ...any) error    { return newf(KindResource, format, args...) }
func Unavailablef(format string, args ...any) error { return newf(KindUnavailable, format, args...) }
func IOf(format string, args ...any) error          { return newf(KindIO, format, args...) }
func Authf(format string, args ...any) error        { return newf(KindAuth, format, args...) }
func Busyf(format string, args ...any) error        { return newf(KindBusy, format, args...) }

// As returns the outermost kinded error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// With returns err classified as kind k unless it already carries a kind
// (context cancellation counts as KindCanceled). A nil err stays nil.
func With(k Kind, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := As(err); ok {
		return err
	}
	if ck, ok := contextKind(err); ok {
		k = ck
	}
	return &Error{Kind: k, Msg: err.Error(), Cause: err}
}

// Wrap adds context to err ("<context>: <err>"), keeping its kind, or using k
// when it has none. A nil err stays nil.
func Wrap(k Kind, err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	if e, ok := As(err); ok {
		k = e.Kind
	} else if ck, ok := contextKind(err); ok {
		k = ck
	}
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...) + ": " + err.Error(), Cause: err}
}

// KindOf reports the kind of err: the kind of the outermost kinded error in
// its chain, KindCanceled for context cancellation and deadlines, and
// KindInternal for anything else.
func KindOf(err error) Kind {
	if e, ok := As(err); ok {
		return e.Kind
	}
	if k, ok := contextKind(err); ok {
		return k
	}
	return KindInternal
}

func contextKind(err error) (Kind, bool) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return KindCanceled, true
	}
	return 0, false
}

// Is reports whether err is of kind k.
func Is(err error, k Kind) bool { return err != nil && KindOf(err) == k }

// GRPCCode is the gRPC status code that carries kind k (the kind itself
// travels in the status details; the code is for generic clients).
func GRPCCode(k Kind) codes.Code {
	switch k {
	case KindQuery:
		return codes.InvalidArgument
	case KindData:
		return codes.DataLoss
	case KindResource:
		return codes.ResourceExhausted
	case KindUnavailable:
		return codes.Unavailable
	case KindCanceled:
		return codes.Canceled
	case KindAuth:
		return codes.Unauthenticated
	case KindBusy:
		return codes.Aborted
	case KindIO:
		return codes.Internal
	}
	return codes.Internal
}

// ExitStatus is the process exit status for an error of kind k, the table
// that docs/cluster.md and `nicflow --help` print: 1 local I/O, 2 bad query
// or usage, 3 bad data, 4 resource exhausted, 5 unavailable, 6
// authentication, 7 busy, 70 internal error (a bug), 130 canceled.
func ExitStatus(k Kind) int {
	switch k {
	case KindIO:
		return 1
	case KindQuery:
		return 2
	case KindData:
		return 3
	case KindResource:
		return 4
	case KindUnavailable:
		return 5
	case KindAuth:
		return 6
	case KindBusy:
		return 7
	case KindCanceled:
		return 130
	}
	return 70
}

// Encode flattens err for the wire: its kind and its full message.
func Encode(err error) (Kind, string) { return KindOf(err), err.Error() }

// Decode rebuilds an error received from the network. remote names the peer
// (for example "worker 10.0.0.7:7400"); it is prefixed unless the message
// already names it, so the user sees where the error happened.
func Decode(k Kind, msg, remote string) error {
	if k >= numKinds {
		k = KindInternal
	}
	if remote != "" && !strings.Contains(msg, remote) {
		msg = remote + ": " + msg
	}
	return &Error{Kind: k, Msg: msg}
}

// OS wraps a failed operation on a local file ("<context>: <err>"): a full
// disk or an exhausted quota is KindResource (the table of exit statuses:
// 4), anything else KindIO, unless err already carries a kind. err stays
// reachable through errors.Unwrap. A nil err stays nil.
func OS(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	if _, ok := As(err); ok {
		return Wrap(KindIO, err, format, args...)
	}
	k := KindIO
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		k = KindResource
	}
	ctx := fmt.Sprintf(format, args...)
	text := err.Error()
	// "writing /a/b: write /a/b: no space left on device" says the path
	// twice: the context names it, the cause says what happened.
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path != "" && strings.Contains(ctx, pe.Path) {
		text = pe.Err.Error()
	}
	return &Error{Kind: k, Msg: ctx + ": " + text, Cause: err}
}
