// Package storage owns the data at rest: Parquet files, the Pebble catalog of
// tables, files, row groups and statistics, loading (COPY, appenders for
// CTAS/INSERT, external tables), scans with projection, row-group pruning and
// pushed-down filters, and the storage service that serves such scans over
// Arrow Flight.
//
// # Layout
//
//	DIR/catalog/             Pebble: the catalog (FormatVersion, keys in catalog.go)
//	DIR/catalog.lock         flock held by the process in a catalog section (a commit)
//	DIR/catalog.lock.want    flock held shared by processes waiting for catalog.lock
//	DIR/session.lock         flock held shared by every process that has DIR open
//	DIR/cache/csv/           CSV files read as tables, converted to Parquet (files_csv.go)
//	DIR/catalog.seal         the catalog's commit count (catalog_seal.go)
//	DIR/catalog.reserve      space held for the catalog on a full disk (catalog_space.go)
//	DIR/catalog.damaged-*    a catalog Recover moved aside (recover.go)
//	DIR/<table>/*.parquet    files nicflow wrote (tpch gen, COPY, appenders)
//	DIR/.nicflow-local-read  token of a running storage service (short-circuit reads)
//
// Entry point: Open(dir) returns a *DB. DB.Tables/Table/Schema list tables,
// columns, files, row groups and statistics (Table.ColumnStats merges them
// for a planner). DB.NewScanner (or DB.OpenScan, the Source interface) scans
// locally; RemoteScanner is the same Source over storage nodes.
//
// # Catalog invariants
//
//   - Every change is one Pebble batch committed with Sync: after a crash
//     the catalog holds the old or the new state, never a mix.
//   - Files are created under temp names, fsynced, renamed, and the
//     directory fsynced BEFORE the batch that references them commits. An
//     "intent" record naming the writer's file prefixes is committed before
//     the first file is created; Open deletes the files of every intent left
//     behind (a writer that died) and reports them in DB.Recovered.
//   - Files a change makes unreachable (DROP, replace) are listed in a
//     "garbage" record inside the same batch, deleted after the commit by
//     a process alone with DIR, else by the next process that opens DIR
//     alone (another process may still be reading them). Files still
//     referenced by a table are never deleted; external tables' files
//     never are.
//   - Tables handed out (*Table) are immutable snapshots; a change publishes
//     a new one after its batch committed.
//   - A catalog is never modified by opening it or reading it: sections
//     that only read open the store read-only; an existing store is
//     opened read-only and checked (layout, records, seal) before any
//     section may open it read-write, and a read-write open never creates
//     a store in a directory that holds one (a lost manifest marker is
//     KindData naming `nicflow catalog recover`, not a new empty store).
//     A new catalog is made only where no database was: a directory with
//     a seal or nicflow data files but no catalog is KindData (the
//     catalog was lost), not an empty database.
//   - Pebble never runs out of disk (catalog_space.go): a read-write
//     section starts only when the disk has room for what it may write,
//     else it fails at once with KindResource; its writes go through
//     reserveFS, which gives back part of DIR/catalog.reserve when the
//     disk fills meanwhile. Sections whose statement frees space (DROP
//     TABLE, an aborted load, recovery) may count the reserve. An aborted
//     load deletes its files before it takes the catalog, so a load that
//     filled the disk makes the room its abort needs.
//   - Every data file records in its footer the table's definition and
//     what the write replaced (recover.go: footerTableKey,
//     footerWriteKey), so that Recover can rebuild a lost catalog from
//     the files: tables, constraints and their key records, without the
//     files later writes replaced.
//   - Several processes may have DIR open (each holds DIR/session.lock
//     shared). The Pebble store is open only inside a catalog section,
//     under DIR/catalog.lock held exclusively (holder pid and command
//     recorded; a section waits up to two minutes for another's, then
//     fails with KindBusy naming the holder). Every change runs in a
//     section that first reloads the in-memory catalog if another process
//     committed since, so a change is computed from the latest state and
//     checked against it (a statement whose table changed under it fails
//     and is run again). Readers reload when the seal counts more commits
//     than they have seen. Intents and garbage are cleaned up at Open only
//     by a process alone with DIR: another's intent belongs to a live
//     writer. A load into a table with unique keys holds its section to
//     the end (its keys are checked against the committed ones as rows
//     come). Between statements a process keeps its section (sticky)
//     until another one waits for catalog.lock (DIR/catalog.lock.want,
//     held shared by waiters) or a second passes.
//   - Within one process, goroutines share one DB (a server's sessions,
//     engine.SharedDB): a statement holds a read (DB.BeginRead, reads.go)
//     from before it looks its tables up until its rows are closed, and
//     garbage committed while reads that began before it are held keeps
//     its files (and its record) until they have ended; the last of them
//     deletes them. An empty table directory is removed only when no
//     intent names it, and a load makes its directory in the section that
//     commits its intent, so a collection never removes the directory of
//     a load that has not written its first file yet.
//   - After an append, the table's trailing small files are merged in
//     tiers of ten (compact.go): rows keep their order and keys, a merge
//     is one more copy-on-write commit that fails harmlessly if the table
//     changed meanwhile, and a table filled row by row keeps O(log n)
//     files.
//   - A storage node's tables that arrived by placement (Table.Received)
//     belong to the catalog that placed them: its DB.Prune (retain.go)
//     drops the ones it no longer has and the files it no longer places
//     there. Tables a node loaded itself are never pruned.
//
// # Files a statement names
//
// File tables (files.go: FROM 'x.parquet', read_parquet, read_csv through
// files_csv.go), COPY FROM and TO and external tables read and write
// files outside the database directory. Under a file access root
// (files_root.go: FileRoot, engine.Options.FileAccess) each of those
// files is matched, opened and created through the root's os.Root, so
// that no glob, link or ".." reaches outside it, checked or not; a
// confined file table's name carries the root, and its scans open its
// files through the root too (Table.root).
//
// # Types
//
// Arrow types are stored as (decisions D4): int32, int64, float64, bool,
// utf8, date32, decimal(P<=18,S) as arrow decimal64 in memory and INT64-backed
// DECIMAL in Parquet, decimal(P>18) as decimal128 / FIXED_LEN_BYTE_ARRAY(16).
// Foreign files may hold decimals as INT32, INT64 or FLBA, FLOAT columns and
// unsigned integers: they are widened when read (decimal(P<=18) always
// arrives as decimal64; UINT_8/16/32 as int64, UINT_64 as decimal(20,0),
// whose minima and maxima are not used: signed readings would be wrong).
// INTERVAL columns are FIXED_LEN_BYTE_ARRAY(16) holding the decimal128
// whose memory is Arrow's month-day-nano value, named in the footer's
// key-value metadata (types.go: intervalKey); they keep no statistics.
//
// Foreign files (parquet_columns.go, decisions D56): ENUM and JSON read
// as utf8, BSON and un-annotated BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY as
// bytea, UUID as its canonical text, FLOAT16 as float64, Parquet's 12-byte
// INTERVAL as month-day-nano, INT96 as a timestamp, a top-level LIST of
// plain values (three-level or legacy two-level) as an array column. A
// column nicflow does not read (STRUCT, MAP, a list of lists, other
// repeated fields, unknown leaf types) leaves its file readable:
// Table.Unreadable lists it, and a query reading it fails with
// Unreadable.Err, a KindData error naming column and file.
//
// Array columns (parquet_list.go, decisions D70): catalog type "T[]",
// written as the standard three-level LIST; a row group's list column is
// decoded whole when the row group starts (levels and values), each
// batch's lists built from it; their leaf statistics are not kept (they
// describe elements, not rows), and storage predicates never name them.
//
// # Scans
//
// A ScanSpec (plain data, JSON in Flight tickets) names the table, optionally
// files and row groups, the projected columns and a Predicate (AND/OR of
// column-vs-constant tests). Planning prunes row groups with the catalog's
// min/max/null statistics without opening files. Each row group is decoded
// straight into typed Go slices (vectors), in chunks of BatchSize rows:
// filter columns first, conjunct by conjunct, each column decoded only if
// rows survive so far; the remaining projected columns are decoded only for
// chunks with survivors (skipped otherwise), and survivors are gathered
// into dense Arrow arrays (no selection vectors leave storage). An IN
// list longer than smallSet values is sorted once when the predicate is
// compiled and binary-searched per row (and per row group's min/max).
// Counters: ScanStats.
//
// Join key filters (keyfilter.go, scan_keyfilter.go, keyfilter_arrow.go):
// a local scan may also apply ScanOptions.KeyFilters, the build keys a hash join above it
// publishes at run time (min/max and a Bloom filter). They run after the
// predicate, before materialization, and skip row groups whose statistics
// miss the keys (records a storage node sends over Flight get them in
// exec.Scan, through KeyFilter.FilterArray; a placed scan that decodes the
// node's files here filters them in its Scanner and says so per record,
// KeyFilterReporter, so no record is filtered twice). INVARIANT: a key filter never drops a row whose key is a
// build key; until published (or once disabled or off) it passes every
// row, and nothing ever waits for it.
//
// Encodings written (parquet.go, D73): integer columns (int32, int64,
// dates, times, timestamps, decimals on INT64) with more than one distinct
// value in 8 of a file's first 65,536 rows are DELTA_BINARY_PACKED, the
// others dictionary-encoded (PLAIN when a dictionary outgrows 1 MiB);
// the writer holds its first rows back until it has chosen.
//
// Decoding: flat columns with PLAIN, dictionary-encoded or (integers)
// DELTA_BINARY_PACKED pages go through our page decoder (parquet_flat.go
// over parquet_pages.go and parquet_delta.go: the chunk is read
// into a pooled buffer, pages are decompressed into a reused one, pages
// whose rows are all skipped are never decompressed); anything else goes
// through arrow-go's low-level column readers (colDecoder). A chunk whose
// data pages are all dictionary-encoded yields vectors in dictionary form
// (the dictionary plus one index per row): filters test each dictionary
// entry once and look rows up by index, and materialization gathers the
// survivors from the dictionary.
//
// # Integrity
//
// Every file open checks the file's size against the catalog (truncation,
// missing files: KindData naming the file; count(*) included) and parses
// the footer once per process. The catalog records, when a file is written
// or registered, xxh3 checksums of its footer (File.FooterSum) and of
// every column chunk (RowGroup.Sums): the footer is checked before it is
// parsed, and every chunk each time a scan reads it (integrity.go; about
// 50 GB/s of hashing, no measurable cost on TPC-H SF 1), so a damaged file
// is a KindData error naming the file, row group and column, never a wrong
// answer. Files registered before chunk checksums existed have their
// whole-file checksum verified on first use in a process instead (as all
// files do with Options.VerifyChecksums); DB.Verify (`nicflow catalog
// verify`) checks whole files. A file of such an older catalog that passed
// gets its footer and chunk checksums recorded in the catalog (upgrade.go,
// one commit that changes nothing else and never makes a scan wait), so
// that later processes need no whole-file check of it. Panics of the
// Parquet decoder on malformed input are recovered and returned as
// KindData errors naming the file and row group.
//
// The catalog counts its commits and seals the count in DIR/catalog.seal
// after each (catalog_seal.go): a catalog that lost commits (a damaged
// write-ahead log's tail) or its whole directory is a KindData error, not
// an older or empty database. Damage Pebble finds (block checksums, the
// manifest, the log) is KindData naming the catalog and how to recover
// (Recover, `nicflow catalog recover`: the manifest marker restored, or the
// catalog rebuilt from the data files, the damaged one moved aside). A
// clean close of a process that changed the catalog flushes it into
// Pebble's checksummed tables.
//
// # Storage service and short-circuit reads
//
// Server (flight.go) serves scans over Flight; RemoteScanner and
// PlacedScanner (for workers without the catalog) are their clients, with
// failover to the next replica. A client with ClientOptions.LocalReads that
// proves it sees a node's directory (a token file the node writes there,
// localread.go) runs the node's own Scanner over the node's files instead:
// the same pruning, filters and integrity checks, through a fileSet (path
// resolution, size checks, footer cache) built from the catalog entries the
// node sent. Anything else falls back to Flight. A ClientPool shares one
// connection per node between scanners (a worker's tasks) and reuses a
// handshake only while the node's token file and the checksums of the
// files read still match it.
//
// Placements stay true (repair.go): a node asked for a table or file it
// does not hold answers KindUnavailable (a stale placement) so that scans
// fail over to another replica, as they do when a node is unreachable or
// its copy is damaged; DB.Repair asks the nodes what they hold and sends
// what is missing to restore the replication factor.
//
// Dependencies: storage imports only Arrow, Parquet, Pebble and Flight
// (gRPC); exec builds on it, never the reverse.
package storage
