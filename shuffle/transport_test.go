package shuffle

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nicflow/nicflow/internal/nferr"
)

// countingTransport is TCP under another scheme, counting the bytes it
// carries: a transport of "another module".
type countingTransport struct{ written atomic.Int64 }

func (c *countingTransport) Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return countingListener{ln, c}, nil
}

func (c *countingTransport) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return countingConn{conn, c}, nil
}

type countingListener struct {
	net.Listener
	t *countingTransport
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.t}, nil
}

type countingConn struct {
	net.Conn
	t *countingTransport
}

func (c countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.t.written.Add(int64(n))
	return n, err
}

var (
	counted     = &countingTransport{}
	countedOnce sync.Once
)

// TestRegisteredTransport: a transport registered by scheme carries the
// agents' links (all-to-all, every message checked), and the built-in
// schemes cannot be taken.
func TestRegisteredTransport(t *testing.T) {
	countedOnce.Do(func() {
		if err := RegisterTransport("counted", counted); err != nil {
			t.Fatal(err)
		}
	})
	before := counted.written.Load()
	c := newCluster(t, 3, clusterMode{"counted-corun", "counted", "corun"}, Options{})
	if a := c.agents[0].Addr(); len(a) < 8 || a[:8] != "counted:" {
		t.Fatalf("agent address %q: want the transport's scheme", a)
	}
	runAllToAll(t, c, 2, 300, 4096, 5)
	if counted.written.Load() == before {
		t.Fatal("the registered transport carried nothing")
	}
	for _, s := range []string{"tcp", "mem", "unix", "shm", "", "a:b"} {
		if err := RegisterTransport(s, counted); !nferr.Is(err, nferr.KindQuery) {
			t.Errorf("registering %q: %v", s, err)
		}
	}
}
