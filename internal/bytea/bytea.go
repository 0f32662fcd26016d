// Package bytea is the text form of binary strings (SQL BYTEA), shared by
// exec (casts, encode/decode), engine (constants, output) and storage
// (CSV loading): PostgreSQL's input formats, hex ("\x48656c6c6f") and
// escape ("abc\\\000"), and its hex output.
package bytea

import (
	"encoding/base64"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error messages of malformed input, PostgreSQL's words.
const (
	ErrOddDigits  = "invalid hexadecimal data: odd number of digits"
	ErrHexDigit   = "invalid hexadecimal digit"
	ErrEscape     = "invalid input syntax for type bytea"
	ErrBase64     = "invalid symbol found while decoding base64 sequence"
	ErrBase64Tail = "invalid base64 end sequence"
)

// Parse appends the bytes of PostgreSQL bytea input text s to dst: "\x"
// then hex digits (pairs, white space allowed between pairs), or the escape
// format (every byte as is, "\\" for a backslash, "\nnn" an octal byte).
// msg is one of the Err constants when s is malformed.
func Parse(dst []byte, s []byte) (out []byte, msg string) {
	if len(s) >= 2 && s[0] == '\\' && (s[1] == 'x' || s[1] == 'X') {
		return ParseHex(dst, s[2:])
	}
	return ParseEscape(dst, s)
}

// ParseString is Parse of a string.
func ParseString(s string) ([]byte, string) { return Parse(nil, []byte(s)) }

// ParseHex appends the bytes of hex digits s (either case); white space
// between pairs is skipped, as PostgreSQL does (bytea input and
// decode(s, 'hex')).
func ParseHex(dst []byte, s []byte) ([]byte, string) {
	for i := 0; i < len(s); {
		c := s[i]
		if isSpace(c) {
			i++
			continue
		}
		hi, ok := unhex(c)
		if !ok {
			return dst, badDigit(s[i:])
		}
		if i+1 >= len(s) {
			return dst, ErrOddDigits
		}
		lo, ok := unhex(s[i+1])
		if !ok {
			return dst, badDigit(s[i+1:])
		}
		dst = append(dst, hi<<4|lo)
		i += 2
	}
	return dst, ""
}

// badDigit is the message of a bad hex digit at the start of s (one
// character, a whole UTF-8 sequence).
func badDigit(s []byte) string {
	r, n := utf8.DecodeRune(s)
	if r == utf8.RuneError {
		return ErrHexDigit
	}
	return ErrHexDigit + ": " + strconv.Quote(string(s[:n]))
}

// ParseEscape appends the bytes of escape-format input s.
func ParseEscape(dst []byte, s []byte) ([]byte, string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			dst = append(dst, '\\')
			i++
		case i+3 < len(s) && isOct(s[i+1]) && s[i+1] <= '3' && isOct(s[i+2]) && isOct(s[i+3]):
			dst = append(dst, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 3
		default:
			return dst, ErrEscape
		}
	}
	return dst, ""
}

const hexDigits = "0123456789abcdef"

// AppendHex appends PostgreSQL's output of b: "\x" and lower-case hex.
func AppendHex(dst []byte, b []byte) []byte {
	dst = append(dst, '\\', 'x')
	return AppendHexDigits(dst, b)
}

// AppendHexDigits appends b in lower-case hex, without a prefix.
func AppendHexDigits(dst []byte, b []byte) []byte {
	for _, c := range b {
		dst = append(dst, hexDigits[c>>4], hexDigits[c&15])
	}
	return dst
}

// Format is AppendHex as a string.
func Format(b []byte) string { return string(AppendHex(make([]byte, 0, 2+2*len(b)), b)) }

// AppendEscape appends encode(b, 'escape'): bytes 0x20..0x7e as they are
// but a backslash doubled; others (and high bytes) as \nnn octal.
func AppendEscape(dst []byte, b []byte) []byte {
	for _, c := range b {
		switch {
		case c == '\\':
			dst = append(dst, '\\', '\\')
		case c == 0 || c >= 0x80:
			dst = append(dst, '\\', '0'+c>>6, '0'+(c>>3)&7, '0'+c&7)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// AppendBase64 appends encode(b, 'base64'): standard base64 with padding,
// a line break after every 76 characters (PostgreSQL's MIME lines).
func AppendBase64(dst []byte, b []byte) []byte {
	enc := base64.StdEncoding
	start := len(dst)
	dst = enc.AppendEncode(dst, b)
	if len(dst)-start <= 76 {
		return dst
	}
	text := string(dst[start:])
	dst = dst[:start]
	for len(text) > 76 {
		dst = append(dst, text[:76]...)
		dst = append(dst, '\n')
		text = text[76:]
	}
	return append(dst, text...)
}

// ParseBase64 appends decode(s, 'base64'): white space is skipped, padding
// optional at the end as PostgreSQL accepts it.
func ParseBase64(dst []byte, s []byte) ([]byte, string) {
	clean := make([]byte, 0, len(s))
	for _, c := range s {
		if !isSpace(c) {
			clean = append(clean, c)
		}
	}
	str := string(clean)
	if i := strings.IndexByte(str, '='); i >= 0 {
		if strings.Trim(str[i:], "=") != "" {
			return dst, ErrBase64
		}
		str = str[:i]
	}
	for _, c := range []byte(str) {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/') {
			return dst, ErrBase64
		}
	}
	if len(str)%4 == 1 {
		return dst, ErrBase64Tail
	}
	out, err := base64.RawStdEncoding.AppendDecode(dst, []byte(str))
	if err != nil {
		return dst, ErrBase64Tail
	}
	return out, ""
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// IsHexDigit reports whether c is a hexadecimal digit.
func IsHexDigit(c byte) bool { _, ok := unhex(c); return ok }

func isOct(c byte) bool   { return c >= '0' && c <= '7' }
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
