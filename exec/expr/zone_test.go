package expr

import (
	"encoding/json"
	"testing"
)

func TestZoneRules(t *testing.T) {
	ny, err := LoadZone("america/new_york")
	if err != nil || ny == nil {
		t.Fatalf("LoadZone: %v", err)
	}
	for _, c := range []struct{ in, want string }{
		{"2024-03-10 02:30", "2024-03-10 03:30:00-04"}, // gap: offset before it
		{"2024-11-03 01:30", "2024-11-03 01:30:00-05"}, // overlap: standard time
		{"2024-07-01 08:00", "2024-07-01 08:00:00-04"},
		{"2024-07-01 08:00+00", "2024-07-01 04:00:00-04"},
		{"2024-07-01 08:00 Asia/Kolkata", "2024-06-30 22:30:00-04"},
	} {
		us, err := ParseTimestampTZ(c.in, ny)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got := FormatTimestampTZ(us, ny); got != c.want {
			t.Errorf("%s: got %s, want %s", c.in, got, c.want)
		}
	}
	for spec, want := range map[string]string{"+02": "2024-07-01 10:00:00-02", "UTC+5": "2024-07-01 07:00:00-05", ZoneSpecFromOffset(5*3600 + 1800): "2024-07-01 17:30:00+05:30", "Etc/UTC": "2024-07-01 12:00:00+00"} {
		loc, err := LoadZone(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		us, _ := ParseTimestamp("2024-07-01 12:00+00", true)
		if got := FormatTimestampTZ(us, loc); got != want {
			t.Errorf("zone %s: got %s, want %s", spec, got, want)
		}
	}
	if _, err := LoadZone("Mars/Base"); err == nil || err.Error() != `time zone "Mars/Base" not recognized` {
		t.Errorf("Mars/Base: %v", err)
	}
}

// TestZoneSerializes checks that the zone a statement was bound in ships
// with an expression (fragments are JSON) and compiles there.
func TestZoneSerializes(t *testing.T) {
	e := Cast(LitString("2024-03-10 02:30"), TimestampTZType)
	e.Zone = "America/New_York"
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back Expr
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Zone != e.Zone {
		t.Fatalf("zone lost: %s", b)
	}
	ce, err := CompileExpr(Cast(back, StringType), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ce.IsConstant() {
		t.Fatal("not folded")
	}
}
