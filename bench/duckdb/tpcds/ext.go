package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// The DuckDB bindings ship the tpcds extension as a static archive
// (libtpcds_extension.a) but do not register it, and extensions cannot be
// downloaded here. extensionFile links that archive into a shared object
// (its DuckDB symbols resolve against this program, which is linked with
// -rdynamic) and appends the 512-byte metadata footer DuckDB checks on
// LOAD: eight 32-byte fields, last first (magic "4", platform, DuckDB
// version, extension version, ABI "CPP"), then an unsigned (zero)
// signature, which the database accepts with allow_unsigned_extensions.
// It needs a C++ compiler (g++, or $CXX) and is cached in dir.
func extensionFile(db *sql.DB, dir string) (string, error) {
	var version, platform string
	if err := db.QueryRow("SELECT library_version FROM pragma_version()").Scan(&version); err != nil {
		return "", err
	}
	if err := db.QueryRow("SELECT platform FROM pragma_platform()").Scan(&platform); err != nil {
		return "", err
	}
	// NB: DuckDB takes the extension's name (and so its entry point,
	// tpcds_duckdb_cpp_init) from the file name.
	dir = filepath.Join(dir, version+"-"+platform)
	out := filepath.Join(dir, "tpcds.duckdb_extension")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	mod := "github.com/duckdb/duckdb-go-bindings/lib/" + runtime.GOOS + "-" + runtime.GOARCH
	libDir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", mod).Output()
	if err != nil {
		return "", fmt.Errorf("finding %s (run from bench/duckdb): %v", mod, err)
	}
	archive := filepath.Join(strings.TrimSpace(string(libDir)), "libtpcds_extension.a")
	if _, err := os.Stat(archive); err != nil {
		return "", fmt.Errorf("the DuckDB bindings have no tpcds archive: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "g++"
	}
	so := out + ".so"
	link := exec.Command(cxx, "-shared", "-o", so, "-Wl,--whole-archive", archive, "-Wl,--no-whole-archive")
	if msg, err := link.CombinedOutput(); err != nil {
		return "", fmt.Errorf("linking the tpcds extension with %s: %v: %s", cxx, err, msg)
	}
	defer os.Remove(so)
	lib, err := os.ReadFile(so)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	b.Write(lib)
	// A WebAssembly custom section header ("duckdb_signature", 512 bytes),
	// as DuckDB's append_metadata script writes it.
	b.Write([]byte{0, 0x93, 0x04, 0x10})
	b.WriteString("duckdb_signature")
	b.Write([]byte{0x80, 0x04})
	fields := []string{"4", platform, version, version, "CPP", "", "", ""}
	for i := len(fields) - 1; i >= 0; i-- {
		f := make([]byte, 32)
		copy(f, fields[i])
		b.Write(f)
	}
	b.Write(make([]byte, 256))
	if err := os.WriteFile(out+".tmp", b.Bytes(), 0o644); err != nil {
		return "", err
	}
	return out, os.Rename(out+".tmp", out)
}

// openDuckDB opens an in-memory DuckDB with the tpcds extension loaded.
func openDuckDB(cache string, threads int) (*sql.DB, error) {
	db, err := sql.Open("duckdb", "?allow_unsigned_extensions=true")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // one connection: views and settings stay visible
	if _, err := db.Exec(fmt.Sprintf("SET threads = %d", threads)); err != nil {
		db.Close()
		return nil, err
	}
	if cache == "" {
		return db, nil
	}
	ext, err := extensionFile(db, cache)
	if err != nil {
		db.Close()
		return nil, err
	}
	if _, err := db.Exec("LOAD '" + strings.ReplaceAll(ext, "'", "''") + "'"); err != nil {
		db.Close()
		return nil, fmt.Errorf("loading %s: %w", ext, err)
	}
	return db, nil
}
