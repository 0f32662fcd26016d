package nferr

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestStatusRoundTrip: every kind survives ToStatus and FromStatus, with
// the peer named once; the code a generic client sees is GRPCCode's.
func TestStatusRoundTrip(t *testing.T) {
	for k := Kind(0); k < numKinds; k++ {
		in := &Error{Kind: k, Msg: "something went wrong"}
		st := ToStatus(in)
		if c := status.Code(st); c != GRPCCode(k) {
			t.Errorf("%v: code %v, want %v", k, c, GRPCCode(k))
		}
		if !ReportedByPeer(st) {
			t.Errorf("%v: not recognized as reported by the peer", k)
		}
		out := FromStatus(st, "worker w1")
		if KindOf(out) != k || out.Error() == "" || strings.Count(out.Error(), "worker w1") != 1 {
			t.Errorf("%v: came back as %v: %v", k, KindOf(out), out)
		}
	}
}

// TestStatusFromOthers: statuses that carry no kind get one from their
// code, the same for every caller (the control plane and storage scans
// once disagreed); a storage node's older "nicflow/<kind>:" prefix still
// decodes; a failed TLS handshake is an authentication error, a handshake
// cut by the network is not.
func TestStatusFromOthers(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Kind
	}{
		{status.Error(codes.PermissionDenied, "no"), KindAuth},
		{status.Error(codes.Unauthenticated, "no"), KindAuth},
		{status.Error(codes.InvalidArgument, "bad"), KindQuery},
		{status.Error(codes.ResourceExhausted, "full"), KindResource},
		{status.Error(codes.DataLoss, "torn"), KindData},
		{status.Error(codes.Unavailable, "connection refused"), KindUnavailable},
		{status.Error(codes.Unavailable, "authentication handshake failed: x509: certificate signed by unknown authority"), KindAuth},
		{status.Error(codes.Unavailable, "authentication handshake failed: read: connection reset by peer"), KindUnavailable},
		{status.Error(codes.Internal, "nicflow/2: spill file damaged"), KindData},
		{status.Error(codes.Unknown, "?"), KindInternal},
		{errors.New("dial tcp: connection refused"), KindUnavailable},
	} {
		got := FromStatus(tc.err, "storage node s1")
		if KindOf(got) != tc.want || !strings.Contains(got.Error(), "storage node s1") {
			t.Errorf("%v: got %v (%v), want %v", tc.err, KindOf(got), got, tc.want)
		}
		if ReportedByPeer(tc.err) {
			t.Errorf("%v: taken for a nicflow peer's report", tc.err)
		}
	}
}
