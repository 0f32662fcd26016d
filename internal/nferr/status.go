package nferr

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The one place where errors cross gRPC (the control plane, Flight, the
// storage service): a status carries the kind in an errdetails.ErrorInfo
// of domain StatusDomain (metadata "kind"), and a code generic clients
// understand (GRPCCode). A status without it (a peer that is not nicflow,
// or a broken connection) gets a kind from its code (KindOfCode).

// StatusDomain marks gRPC status details that carry a Kind.
const StatusDomain = "nicflow"

// ToStatus turns err into a gRPC status error that keeps its kind. A
// status error that is not an nferr error passes as it is.
func ToStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		if _, isNF := As(err); !isNF {
			return err
		}
	}
	k, msg := Encode(err)
	st := status.New(GRPCCode(k), msg)
	if d, derr := st.WithDetails(&errdetails.ErrorInfo{
		Reason:   strings.ToUpper(strings.ReplaceAll(k.String(), " ", "_")),
		Domain:   StatusDomain,
		Metadata: map[string]string{"kind": strconv.Itoa(int(k))},
	}); derr == nil {
		st = d
	}
	return st.Err()
}

// FromStatus turns an error returned by a gRPC or Flight call to remote
// back into an nferr error: the kind carried in the status details when
// the peer is nicflow (or in a "nicflow/<kind>: " message prefix, as
// storage nodes before this codec wrote it), otherwise the kind of its
// code (KindOfCode). remote names the peer in the message ("worker w1
// (10.0.0.7:7401)").
func FromStatus(err error, remote string) error {
	if err == nil {
		return nil
	}
	if _, ok := As(err); ok {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return Wrap(KindCanceled, err, "%s", remote)
		}
		return Unavailablef("%s: %v", remote, err)
	}
	if k, ok := statusKind(st); ok {
		return Decode(k, st.Message(), remote)
	}
	msg := st.Message()
	if rest, ok := strings.CutPrefix(msg, "nicflow/"); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			if k, err := strconv.Atoi(rest[:i]); err == nil && k >= 0 && k < 256 {
				return Decode(Kind(k), rest[i+2:], remote)
			}
		}
	}
	return Decode(KindOfCode(st.Code(), msg), msg, remote)
}

// ReportedByPeer reports whether err is an error the remote node itself
// sent (a status carrying nicflow's details), as opposed to a broken
// connection or a dead peer.
func ReportedByPeer(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	_, ok = statusKind(st)
	return ok
}

func statusKind(st *status.Status) (Kind, bool) {
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.Domain == StatusDomain {
			if k, err := strconv.Atoi(ei.Metadata["kind"]); err == nil && k >= 0 && k < 256 {
				return Kind(k), true
			}
		}
	}
	return 0, false
}

// KindOfCode is the kind of a status code from a peer that did not say
// (msg is the status message: a failed TLS handshake is reported as
// Unavailable, but it is an authentication error).
func KindOfCode(c codes.Code, msg string) Kind {
	switch c {
	case codes.Canceled, codes.DeadlineExceeded:
		return KindCanceled
	case codes.Unavailable:
		if isTLSFailure(msg) {
			return KindAuth
		}
		return KindUnavailable
	case codes.Unauthenticated, codes.PermissionDenied:
		return KindAuth
	case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.FailedPrecondition, codes.OutOfRange, codes.Unimplemented:
		return KindQuery
	case codes.ResourceExhausted:
		return KindResource
	case codes.DataLoss:
		return KindData
	case codes.Aborted:
		return KindBusy
	}
	return KindInternal
}

// isTLSFailure recognizes gRPC's messages for a failed TLS handshake
// (wrong CA, missing or rejected certificate).
func isTLSFailure(msg string) bool {
	// A handshake cut short by the network (the peer died or restarted
	// mid-handshake) is not a refused identity.
	for _, s := range []string{"connection reset by peer", "broken pipe", "connection refused", ": EOF", "i/o timeout", "use of closed network connection"} {
		if strings.Contains(msg, s) {
			return false
		}
	}
	for _, s := range []string{"authentication handshake failed", "x509:", "tls: ", "certificate required", "bad certificate", "unknown certificate authority"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
