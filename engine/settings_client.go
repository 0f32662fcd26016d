package engine

import (
	"strconv"
	"strings"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// clientSetting is a PostgreSQL setting that drivers and tools send when
// they connect (JDBC's extra_float_digits and application_name, psql's
// and DBeaver's search_path, ...). nicflow accepts the values that mean
// what nicflow does anyway and refuses the others, so a client never
// believes a setting took effect that did not: output is always UTF-8,
// dates ISO, intervals in PostgreSQL's style, strings standard-conforming.
type clientSetting struct {
	// value is what SHOW answers before any SET (PostgreSQL's default;
	// "": the server setting of that name, bind.ServerSettings, if any).
	value string
	// allowed are the accepted values (lower case; nil: any value).
	allowed []string
}

var clientSettings = map[string]clientSetting{
	"application_name":                    {value: ""},
	"extra_float_digits":                  {value: "1", allowed: []string{"-15", "-14", "-13", "-12", "-11", "-10", "-9", "-8", "-7", "-6", "-5", "-4", "-3", "-2", "-1", "0", "1", "2", "3"}},
	"client_encoding":                     {allowed: []string{"utf8", "utf-8", "unicode"}},
	"datestyle":                           {allowed: []string{"iso", "iso, mdy", "iso,mdy", "iso, ymd", "iso, dmy"}},
	"intervalstyle":                       {allowed: []string{"postgres"}},
	"standard_conforming_strings":         {allowed: []string{"on", "true"}},
	"search_path":                         {},
	"statement_timeout":                   {value: "0"}, // parseStatementTimeout
	"lock_timeout":                        {value: "0", allowed: []string{"0"}},
	"idle_in_transaction_session_timeout": {value: "0", allowed: []string{"0"}},
	"default_transaction_isolation":       {value: "read committed"},
	"transaction_isolation":               {value: "read committed"},
	"bytea_output":                        {value: "hex", allowed: []string{"hex"}},
	"client_min_messages":                 {value: "notice"},
	"jit":                                 {value: "off"},
	"lc_messages":                         {value: "C"},
}

// check refuses a value nicflow would not honour.
func (c clientSetting) check(name, v string) error {
	if c.allowed == nil {
		return nil
	}
	lv := strings.ToLower(strings.Trim(strings.TrimSpace(v), `'"`))
	for _, a := range c.allowed {
		if lv == a {
			return nil
		}
	}
	q := make([]string, len(c.allowed))
	for i, a := range c.allowed {
		q[i] = strconv.Quote(a)
	}
	return nferr.Queryf("SET %s to %q is not supported (nicflow supports %s)", name, v, strings.Join(q, ", "))
}

// isClientSetting reports whether name is one of clientSettings.
func isClientSetting(name string) bool {
	_, ok := clientSettings[strings.ToLower(name)]
	return ok
}

// parseStatementTimeout reads statement_timeout as PostgreSQL does: a
// number of milliseconds, or a number with a unit (us, ms, s, min, h, d);
// 0 is none.
func parseStatementTimeout(v string) (time.Duration, error) {
	t := strings.ToLower(strings.Trim(strings.TrimSpace(v), `'"`))
	num := strings.TrimRight(t, "abcdefghijklmnopqrstuvwxyz ")
	unit := strings.TrimSpace(t[len(num):])
	n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	scale := map[string]time.Duration{"": time.Millisecond, "us": time.Microsecond, "ms": time.Millisecond, "s": time.Second, "min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[unit]
	if err != nil || scale == 0 || n < 0 || n > float64(1<<62)/float64(scale) {
		return 0, nferr.Queryf("invalid value for statement_timeout: %q (want milliseconds, or a number with a unit: us, ms, s, min, h, d)", v)
	}
	return time.Duration(n * float64(scale)), nil
}
