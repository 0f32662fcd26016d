package cluster

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Gossip traffic (issue 30: gossip bytes per second at idle, per cluster
// size). memberlist's own network transport is wrapped so that every byte
// it sends and receives is counted: UDP packets (probes, gossip) and TCP
// streams (push-pull state exchanges, fallback probes), both directions,
// the encryption's overhead included. The node exports the counts as
// nicflow_gossip_{sent,received}_bytes_total{proto}.

// GossipStats are a node's gossip bytes since it started.
type GossipStats struct {
	UDPSent, UDPReceived, TCPSent, TCPReceived int64
}

type gossipCounters struct {
	udpOut, udpIn, tcpOut, tcpIn atomic.Int64
}

func (g *gossipCounters) stats() GossipStats {
	return GossipStats{UDPSent: g.udpOut.Load(), UDPReceived: g.udpIn.Load(), TCPSent: g.tcpOut.Load(), TCPReceived: g.tcpIn.Load()}
}

// countingTransport is memberlist's NetTransport with its traffic counted.
type countingTransport struct {
	*memberlist.NetTransport
	n       *gossipCounters
	packets chan *memberlist.Packet
	streams chan net.Conn
	// stopping closes when Shutdown starts: what still arrives is dropped
	// (memberlist may have stopped reading), but forward keeps draining the
	// NetTransport, whose Shutdown waits for its listeners, blocked until
	// their packet is taken; done closes once that Shutdown returned.
	stopping, done chan struct{}
	once           sync.Once
}

// newCountingTransport binds c's gossip address as memberlist would (a
// few tries for an ephemeral port, which it then records in c) and
// installs the counting transport as c.Transport.
func newCountingTransport(c *memberlist.Config, n *gossipCounters) error {
	nc := &memberlist.NetTransportConfig{BindAddrs: []string{c.BindAddr}, BindPort: c.BindPort, Logger: c.Logger}
	tries := 1
	if c.BindPort == 0 {
		tries = 10 // NB: UDP and TCP must get the same free port: racy
	}
	var nt *memberlist.NetTransport
	var err error
	for range tries {
		if nt, err = memberlist.NewNetTransport(nc); err == nil || !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	if err != nil {
		return nferr.Unavailablef("starting gossip on %s:%d: %v", c.BindAddr, c.BindPort, err)
	}
	if c.BindPort == 0 {
		c.BindPort = nt.GetAutoBindPort()
		c.AdvertisePort = c.BindPort
	}
	t := &countingTransport{NetTransport: nt, n: n, packets: make(chan *memberlist.Packet), streams: make(chan net.Conn), stopping: make(chan struct{}), done: make(chan struct{})}
	go t.forward()
	c.Transport = t
	return nil
}

// forward counts what arrives and hands it to memberlist.
func (t *countingTransport) forward() {
	in, sin := t.NetTransport.PacketCh(), t.NetTransport.StreamCh()
	for {
		select {
		case p := <-in:
			t.n.udpIn.Add(int64(len(p.Buf)))
			select {
			case t.packets <- p:
			case <-t.stopping:
			}
		case c := <-sin:
			select {
			case t.streams <- &countedConn{Conn: c, n: t.n}:
			case <-t.stopping:
				c.Close()
			}
		case <-t.done:
			return
		}
	}
}

func (t *countingTransport) PacketCh() <-chan *memberlist.Packet { return t.packets }
func (t *countingTransport) StreamCh() <-chan net.Conn           { return t.streams }

func (t *countingTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	t.n.udpOut.Add(int64(len(b)))
	return t.NetTransport.WriteTo(b, addr)
}

func (t *countingTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	t.n.udpOut.Add(int64(len(b)))
	return t.NetTransport.WriteToAddress(b, a)
}

func (t *countingTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	c, err := t.NetTransport.DialTimeout(addr, timeout)
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: c, n: t.n}, nil
}

func (t *countingTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	c, err := t.NetTransport.DialAddressTimeout(a, timeout)
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: c, n: t.n}, nil
}

func (t *countingTransport) Shutdown() error {
	var err error
	t.once.Do(func() {
		close(t.stopping)
		err = t.NetTransport.Shutdown()
		close(t.done)
	})
	return err
}

// countedConn counts a gossip stream's bytes.
type countedConn struct {
	net.Conn
	n *gossipCounters
}

func (c *countedConn) Read(p []byte) (int, error) {
	k, err := c.Conn.Read(p)
	c.n.tcpIn.Add(int64(k))
	return k, err
}

func (c *countedConn) Write(p []byte) (int, error) {
	k, err := c.Conn.Write(p)
	c.n.tcpOut.Add(int64(k))
	return k, err
}
