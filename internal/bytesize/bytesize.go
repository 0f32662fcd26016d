// Package bytesize prints byte counts for people: one format for every
// message that names a size (memory budgets, spill limits, free disk).
package bytesize

import "fmt"

// Format prints n bytes with a binary unit ("1.5 GiB", "512 B").
func Format(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
