package shuffle

import (
	"testing"
)

func TestAllToAllExactlyOnce(t *testing.T) {
	for _, mode := range allModes {
		t.Run(mode.name, func(t *testing.T) {
			opts := Options{AggSize: 1024, Buffers: 2, AgentBuffers: 2, Credits: 8192, Threads: 2}
			c := newCluster(t, 3, mode, opts)
			runAllToAll(t, c, 2, 2000, 300, 1)
		})
	}
}
