package pgwire

import (
	"encoding/binary"
	"testing"
)

// TestNumericText: binary numerics decode to the text they encode from,
// and malformed ones fail instead of panicking.
func TestNumericText(t *testing.T) {
	for _, s := range []string{"0", "1", "-1", "12345678.90", "0.0001", "-0.00012", "10000", "99999999999999999999.123456789", "0.5", "123.4500", "1000000"} {
		b, err := numericBinary(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := numericText(b)
		if err != nil || got != s {
			t.Errorf("%s: decoded %q %v", s, got, err)
		}
	}
	nan := binary.BigEndian.AppendUint16(make([]byte, 4), 0xC000)
	if got, err := numericText(append(nan, 0, 0)); err != nil || got != "NaN" {
		t.Errorf("NaN: %q %v", got, err)
	}
	for _, bad := range [][]byte{nil, {0, 1, 0, 0, 0, 0, 0, 0}, {0, 1, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, {0, 0, 0, 0, 0x12, 0x34, 0, 0}} {
		if _, err := numericText(bad); err == nil {
			t.Errorf("%x decoded", bad)
		}
	}
}
