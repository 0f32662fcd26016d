package engine

import "github.com/nicflow/nicflow/storage"

// SharedDB is a database directory opened once in this process for the
// sessions of a server (one per client connection): Session makes one
// without any I/O, where Open opens the catalog (Pebble, file locks, the
// tables' load) for each. The sessions share the storage.DB, its table
// definitions and the allocator; each keeps its own settings (SET) and
// transaction block. Statements of different sessions run side by side:
// storage serializes their commits, and files a change makes unreachable
// stay until the statements that could read them have ended
// (storage.DB.BeginRead).
type SharedDB struct {
	db   *storage.DB
	cat  *StorageCatalog
	opts Options
}

// OpenShared opens the database in dir (creating an empty one when dir
// holds none) for sessions made with Session. opts, validated here, are
// every session's initial settings.
func OpenShared(dir string, opts Options) (*SharedDB, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	db, err := storage.Open(dir, opts.Storage)
	if err != nil {
		return nil, err
	}
	cat := NewStorageCatalog(db)
	cat.fileAccess = opts.FileAccess
	return &SharedDB{db: db, cat: cat, opts: opts}, nil
}

// Session is a new session of the shared database, with obs (nil: none)
// as its Options.Observer. Closing it leaves the database open.
func (d *SharedDB) Session(obs Observer) *Session {
	o := d.opts
	o.Observer = obs
	return &Session{db: d.db, cat: d.cat, opts: o, shared: true, queryRetries: -1}
}

// Conn is Session as a Conn.
func (d *SharedDB) Conn(obs Observer) Conn { return LocalConn(d.Session(obs)) }

// DB is the shared database.
func (d *SharedDB) DB() *storage.DB { return d.db }

// Close closes the database, after every session's last result was
// closed.
func (d *SharedDB) Close() error { return d.db.Close() }
