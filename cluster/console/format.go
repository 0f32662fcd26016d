package console

import (
	"fmt"
	"html/template"
	"strconv"
	"time"

	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

// templateFuncs format figures in the pages as console.js does.
var templateFuncs = template.FuncMap{
	"bytes": func(n int64) string {
		if n <= 0 {
			return "—"
		}
		return exec.FormatBytes(n)
	},
	"bits": formatBits,
	"ms":   formatMs,
	"count": func(n int64) string {
		return strconv.FormatInt(n, 10)
	},
	"clock": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Local().Format("15:04:05")
	},
	"short": func(s string) string {
		if r := []rune(s); len(r) > 160 {
			return string(r[:160]) + "…"
		}
		return s
	},
}

// formatBits prints a bandwidth in bits per second ("—" when unknown).
func formatBits(n int64) string {
	switch {
	case n <= 0:
		return "—"
	case n >= 1e9:
		return strconv.FormatFloat(float64(n)/1e9, 'f', -1, 64) + " Gbit/s"
	case n >= 1e6:
		return strconv.FormatFloat(float64(n)/1e6, 'f', -1, 64) + " Mbit/s"
	}
	return strconv.FormatInt(n, 10) + " bit/s"
}

// formatMs prints a duration in milliseconds.
func formatMs(ms int64) string {
	if ms < 1000 {
		return strconv.FormatInt(ms, 10) + " ms"
	}
	return fmt.Sprintf("%.1f s", float64(ms)/1000)
}

func errNotCoordinator(id string) error {
	return nferr.Queryf("node %s is not a coordinator: it runs no SQL", id)
}
