package bytea

import (
	"bytes"
	"testing"
)

func TestParseAndFormat(t *testing.T) {
	for _, c := range []struct {
		in, want, msg string
	}{
		{`\x48656c6C6f`, "Hello", ""},
		{`\X00ff`, "\x00\xff", ""},
		{`\x`, "", ""},
		{"\\x 01 02\n", "\x01\x02", ""},
		{`\x123`, "", ErrOddDigits},
		{`\x1g`, "", ErrHexDigit + `: "g"`},
		{`\x0 1`, "", ErrHexDigit + `: " "`},
		{`abc`, "abc", ""},
		{`a\\b\000\377`, "a\\b\x00\xff", ""},
		{`a\b`, "", ErrEscape},
		{`\400`, "", ErrEscape},
		{`\01`, "", ErrEscape},
		{``, "", ""},
	} {
		got, msg := ParseString(c.in)
		if msg != c.msg || (msg == "" && string(got) != c.want) {
			t.Errorf("Parse(%q) = %q, %q; want %q, %q", c.in, got, msg, c.want, c.msg)
		}
	}
	if got := Format([]byte("\x00\xffA")); got != `\x00ff41` {
		t.Errorf("Format = %s", got)
	}
	if got := string(AppendEscape(nil, []byte("a\\\x00\x80\n"))); got != "a\\\\\\000\\200\n" {
		t.Errorf("AppendEscape = %q", got)
	}
	// Every byte string reads back from its hex and escape text.
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, text := range [][]byte{AppendHex(nil, all), AppendEscape(nil, all)} {
		if got, msg := Parse(nil, text); msg != "" || !bytes.Equal(got, all) {
			t.Errorf("round trip of %q: %q", text, msg)
		}
	}
}

func TestBase64(t *testing.T) {
	long := bytes.Repeat([]byte("x"), 100)
	enc := AppendBase64(nil, long)
	if bytes.IndexByte(enc, '\n') != 76 {
		t.Errorf("base64 lines: %q", enc)
	}
	for _, b := range [][]byte{nil, []byte("H"), []byte("He"), []byte("Hello"), long} {
		got, msg := ParseBase64(nil, AppendBase64(nil, b))
		if msg != "" || !bytes.Equal(got, b) {
			t.Errorf("base64 round trip of %q: %q %q", b, got, msg)
		}
	}
	for _, in := range []string{"SGVsbG8", "SGVsbG8=", "SG Vs\nbG8="} {
		if got, msg := ParseBase64(nil, []byte(in)); msg != "" || string(got) != "Hello" {
			t.Errorf("ParseBase64(%q) = %q, %q", in, got, msg)
		}
	}
	for _, in := range []string{"SGV$", "S", "SG=x"} {
		if _, msg := ParseBase64(nil, []byte(in)); msg == "" {
			t.Errorf("ParseBase64(%q) accepted", in)
		}
	}
}
