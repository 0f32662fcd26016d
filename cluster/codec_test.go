package cluster

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nicflow/nicflow/internal/nferr"
)

func sampleInfo() NodeInfo {
	return NodeInfo{
		Role: RoleWorker, Cores: 16, Memory: 48 << 30, NICBandwidth: 200e9,
		ControlAddr: "10.0.0.7:7401", DataAddr: "10.0.0.7:7500", FlightAddr: "", AdminAddr: "127.0.0.1:7481",
		Started: time.UnixMilli(1_790_000_000_123),
	}
}

func TestMetaRoundTrip(t *testing.T) {
	for _, leaving := range []bool{false, true} {
		in := sampleInfo()
		in.Leaving = leaving
		b, err := encodeMeta(in)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 80 { // 41 bytes of addresses + ~25 of numbers
			t.Errorf("metadata is %d bytes; expected a compact encoding under 80", len(b))
		}
		out, err := decodeMeta(b)
		if err != nil {
			t.Fatal(err)
		}
		if !out.Started.Equal(in.Started) {
			t.Errorf("started %v != %v", out.Started, in.Started)
		}
		out.Started = in.Started
		if out != in {
			t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
		}
	}
	// Metadata of version 1 without the flags byte (older encoders) still reads.
	b, _ := encodeMeta(sampleInfo())
	if _, err := decodeMeta(b[:len(b)-1]); err != nil {
		t.Errorf("without flags: %v", err)
	}
	long := sampleInfo()
	long.DataAddr = strings.Repeat("a", 600) + ":1"
	if _, err := encodeMeta(long); err == nil || !nferr.Is(err, nferr.KindQuery) {
		t.Errorf("oversized metadata: %v", err)
	}
}

func TestMetaRejects(t *testing.T) {
	good, _ := encodeMeta(sampleInfo())
	for name, b := range map[string][]byte{
		"empty":     nil,
		"version":   append([]byte{9}, good[1:]...),
		"role":      append([]byte{1, 77}, good[2:]...),
		"truncated": good[:5],
		"addr overrun": func() []byte {
			c := append([]byte(nil), good[:len(good)-1]...)
			return append(c[:len(c)-20], 0x7f)
		}(),
	} {
		if _, err := decodeMeta(b); !nferr.Is(err, nferr.KindData) {
			t.Errorf("%s: %v, want a data error", name, err)
		}
	}
}

func FuzzDecodeMeta(f *testing.F) {
	good, _ := encodeMeta(sampleInfo())
	f.Add(good)
	f.Add([]byte{1, 2})
	f.Add([]byte{1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := decodeMeta(b)
		if err != nil {
			if !nferr.Is(err, nferr.KindData) {
				t.Fatalf("error of kind %v: %v", nferr.KindOf(err), err)
			}
			return
		}
		// Whatever decodes re-encodes to something that decodes the same.
		b2, err := encodeMeta(n)
		if err != nil {
			return // addresses too long for a fresh encoding
		}
		n2, err := decodeMeta(b2)
		if err != nil || n2.ControlAddr != n.ControlAddr || n2.Cores != n.Cores || n2.Role != n.Role {
			t.Fatalf("re-decode: %+v vs %+v (%v)", n2, n, err)
		}
	})
}

func TestFrameRoundTrip(t *testing.T) {
	in := &frame{Type: ftData, Header: []byte(`{"a":1}`), Meta: []byte("metadata bytes"), Body: bytes.Repeat([]byte{7}, 1000)}
	var out frame
	if err := unmarshalFrame(in.marshal(), &out); err != nil {
		t.Fatal(err)
	}
	if out.Type != in.Type || !bytes.Equal(out.Header, in.Header) || !bytes.Equal(out.Meta, in.Meta) || !bytes.Equal(out.Body, in.Body) {
		t.Errorf("round trip: %+v", out)
	}
	b := in.marshal()
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 0x40
		if err := unmarshalFrame(c, &out); !nferr.Is(err, nferr.KindData) {
			t.Fatalf("flipped byte %d: %v, want a data error", i, err)
		}
	}
	var codec frameCodec
	if _, err := codec.Marshal("not a frame"); err == nil {
		t.Error("codec marshaled a string")
	}
	if err := codec.Unmarshal(b, &struct{}{}); err == nil {
		t.Error("codec unmarshaled into a struct")
	}
}

func FuzzUnmarshalFrame(f *testing.F) {
	f.Add((&frame{Type: ftHeartbeat, Header: []byte(`{"stats":{}}`)}).marshal())
	f.Add((&frame{Type: ftData, Meta: []byte{1, 2, 3}, Body: []byte("body")}).marshal())
	f.Add([]byte("NF\x01\x04garbage-garbage"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var fr frame
		err := unmarshalFrame(b, &fr)
		if err != nil {
			if !nferr.Is(err, nferr.KindData) {
				t.Fatalf("error of kind %v: %v", nferr.KindOf(err), err)
			}
			return
		}
		// A valid frame's header decodes into every header type without panicking.
		var st taskStatus
		fr.decodeHeader(fr.Type, &st)
		var tr taskRequest
		fr.decodeHeader(fr.Type, &tr)
		if got := fr.marshal(); !bytes.Equal(got, b) {
			t.Fatalf("re-marshal differs")
		}
	})
}

func TestParseTicket(t *testing.T) {
	r, err := ParseTicket([]byte("select 1"))
	if err != nil || r.Kind != "sql" || r.Text != "select 1" || r.ID != "" {
		t.Errorf("plain SQL: %+v %v", r, err)
	}
	r, err = ParseTicket([]byte(`{"v":1,"id":"q-1","kind":"nicflow.check","params":{"rows":"5"}}`))
	if err != nil || r.ID != "q-1" || r.Kind != CheckKind || r.Params["rows"] != "5" {
		t.Errorf("JSON: %+v %v", r, err)
	}
	for _, bad := range []string{`{"v":2}`, `{"v":1,"id":"a b"}`, "{not json", "\xff\xfe", `{"v":1,"id":"` + strings.Repeat("x", 65) + `"}`} {
		if _, err := ParseTicket([]byte(bad)); !nferr.Is(err, nferr.KindQuery) {
			t.Errorf("%q: %v, want a query error", bad, err)
		}
	}
}

func FuzzParseTicket(f *testing.F) {
	f.Add([]byte("select 1"))
	f.Add([]byte(`{"v":1,"id":"x","text":"select 2"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := ParseTicket(b); err != nil && !nferr.Is(err, nferr.KindQuery) {
			t.Fatalf("error of kind %v: %v", nferr.KindOf(err), err)
		}
	})
}

func TestStatusKeepsKinds(t *testing.T) {
	for k := nferr.KindInternal; k < nferr.KindAuth+1; k++ {
		in := nferr.Decode(k, "it broke in operator scan", "")
		out := FromStatus(ToStatus(in), "worker w9")
		if nferr.KindOf(out) != k || !strings.Contains(out.Error(), "it broke in operator scan") || !strings.Contains(out.Error(), "worker w9") {
			t.Errorf("kind %v: got %v (%v)", k, out, nferr.KindOf(out))
		}
	}
	// Foreign statuses map by code; TLS failures are auth errors.
	cases := map[error]nferr.Kind{
		status.Error(codes.Unavailable, "connection refused"): nferr.KindUnavailable,
		status.Error(codes.Unavailable, "connection error: desc = \"transport: authentication handshake failed: x509: certificate signed by unknown authority\""):                     nferr.KindAuth,
		status.Error(codes.Unavailable, "connection error: desc = \"transport: authentication handshake failed: read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer\""): nferr.KindUnavailable,
		status.Error(codes.Canceled, "context canceled"): nferr.KindCanceled,
		status.Error(codes.InvalidArgument, "bad"):       nferr.KindQuery,
		errors.New("plain"):                              nferr.KindUnavailable,
		context.Canceled:                                 nferr.KindCanceled,
	}
	for in, want := range cases {
		if got := FromStatus(in, "x"); nferr.KindOf(got) != want {
			t.Errorf("%v: kind %v, want %v", in, nferr.KindOf(got), want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	base := func() Options {
		o := Options{Role: RoleWorker, KeyDir: "/k", GossipAddr: "127.0.0.1:0", ControlAddr: "127.0.0.1:0", AdvertiseHost: "127.0.0.1"}
		o.SetDefaults()
		return o
	}
	if err := func() error { o := base(); return o.Validate() }(); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	for _, c := range []struct {
		mut  func(*Options)
		kind nferr.Kind
		msg  string
	}{
		{func(o *Options) { o.KeyDir = "" }, nferr.KindAuth, "key_dir is required"},
		{func(o *Options) { o.Role = 0 }, nferr.KindQuery, "role"},
		{func(o *Options) { o.GossipAddr = "nocolon" }, nferr.KindQuery, "gossip_addr"},
		{func(o *Options) { o.Join = []string{"host:0"} }, nferr.KindQuery, "join[0]"},
		{func(o *Options) { o.Cores = -1 }, nferr.KindQuery, "cores"},
		{func(o *Options) { o.Memory = 10 }, nferr.KindQuery, "memory"},
		{func(o *Options) { o.AdvertiseHost = "0.0.0.0" }, nferr.KindQuery, "wildcard"},
		{func(o *Options) { o.HeartbeatTimeout = o.HeartbeatInterval }, nferr.KindQuery, "heartbeat_timeout"},
		{func(o *Options) { o.HangAfter = o.HeartbeatInterval }, nferr.KindQuery, "hang_after"},
		{func(o *Options) { o.NodeID = "a b" }, nferr.KindQuery, "node_id"},
		{func(o *Options) { o.Gossip = "fast" }, nferr.KindQuery, "gossip"},
		{func(o *Options) { o.Role = RoleStorage }, nferr.KindQuery, "control_addr is not used"},
		{func(o *Options) { o.ScanCodec = "gzip" }, nferr.KindQuery, "scan_codec"},
		{func(o *Options) { o.ShuffleCodec = "brotli" }, nferr.KindQuery, "shuffle_codec"},
	} {
		o := base()
		c.mut(&o)
		err := o.Validate()
		if !nferr.Is(err, c.kind) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v", c.msg, err)
		}
	}
}

func TestParseBandwidth(t *testing.T) {
	for in, want := range map[string]int64{"25Gbit": 25e9, "100G": 100e9, "10gbps": 10e9, "400Mbit": 400e6, "1000": 1000, "1.5T": 1.5e12} {
		if got, err := ParseBandwidth(in); err != nil || got != want {
			t.Errorf("%s: %d %v, want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "fast", "-1G", "0"} {
		if _, err := ParseBandwidth(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if s := FormatBandwidth(25e9); s != "25 Gbit/s" {
		t.Errorf("format: %s", s)
	}
}
