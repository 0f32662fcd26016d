//go:build !linux

package exec

import "unsafe"

// populateWrite has no system call to use outside Linux: prefault touches
// the pages itself.
func populateWrite(unsafe.Pointer, uintptr) bool { return false }
