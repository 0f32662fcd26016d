package pgwire

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/nicflow/nicflow/engine"
)

// FuzzConnection sends arbitrary bytes after a valid startup: the server
// answers or closes the connection, never panics or hangs.
func FuzzConnection(f *testing.F) {
	dir := f.TempDir()
	db, err := engine.OpenShared(dir, engine.Options{Parallelism: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	srv := &Server{opts: Options{Open: func() (engine.Conn, error) { return db.Conn(nil), nil }}, conns: map[uint32]*conn{}}
	if err := srv.opts.Validate(); err != nil {
		f.Fatal(err)
	}
	msg := func(t byte, body string) []byte {
		b := []byte{t}
		b = binary.BigEndian.AppendUint32(b, uint32(len(body)+4))
		return append(b, body...)
	}
	f.Add(msg('Q', "select 1\x00"))
	f.Add(msg('Q', "select 1 from\x00"))
	f.Add(append(msg('P', "s\x00select $1\x00\x00\x00"), msg('S', "")...))
	f.Add(append(append(msg('P', "\x00select 1.5::decimal(3,1)\x00\x00\x00"), msg('B', "\x00\x00\x00\x00\x00\x00\x00\x01\x00\x01")...), append(msg('E', "\x00\x00\x00\x00\x00"), msg('S', "")...)...))
	// A portal suspended at a row limit, resumed, then closed.
	f.Add(append(append(msg('P', "\x00select * from generate_series(1, 5)\x00\x00\x00"), msg('B', "p\x00\x00\x00\x00\x00\x00\x00\x00")...),
		append(append(msg('E', "p\x00\x00\x00\x00\x02"), msg('E', "p\x00\x00\x00\x00\x02")...), append(msg('C', "Pp\x00"), msg('S', "")...)...)...))
	// COPY in and out, a copy-in the client fails, and a transaction
	// block with a write refused in it.
	f.Add(append(append(msg('Q', "create table c (a int, b text)\x00"), msg('Q', "copy c from stdin\x00")...),
		append(append(msg('d', "1\tx\n2\t\\N\n"), msg('c', "")...), msg('Q', "copy c to stdout (format csv)\x00")...)...))
	f.Add(append(msg('Q', "copy c from stdin\x00"), append(msg('d', "1\t"), msg('f', "aborted\x00")...)...))
	f.Add(append(append(msg('Q', "begin\x00"), msg('Q', "insert into c values (3, 'y')\x00")...), append(msg('Q', "select 1\x00"), msg('Q', "rollback\x00")...)...))
	f.Add(msg('D', "Sx\x00"))
	f.Add([]byte{'X', 0, 0, 0, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			srv.handle(server)
		}()
		fe := pgproto3.NewFrontend(client, client)
		fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "fuzz"}})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		// Read the server's answers in the background; write the bytes.
		go func() {
			buf := make([]byte, 4096)
			for {
				if _, err := client.Read(buf); err != nil {
					return
				}
			}
		}()
		client.SetWriteDeadline(time.Now().Add(5 * time.Second))
		client.Write(data)
		client.Write([]byte{'X', 0, 0, 0, 4}) // Terminate
		// A message may claim more bytes than come: the client leaves.
		client.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the server did not end the connection after the client left")
		}
	})
}
