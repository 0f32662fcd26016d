//go:build !linux

package tpch

// allocPool returns size bytes for the text pool.
func allocPool(size int) []byte { return make([]byte, size) }
