package engine

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/nicflow/nicflow/internal/nferr"
)

// FileAccessNone is the Options.FileAccess that forbids every file path.
const FileAccessNone = "none"

// checkFileAccess checks that statements may use path (a file, a
// directory or a glob) under the file access policy root (Options.
// FileAccess): "" allows anything; FileAccessNone nothing; a directory
// only paths that resolve, through symbolic links, inside it.
func checkFileAccess(root, path string) error {
	switch root {
	case "":
		return nil
	case FileAccessNone:
		return &nferr.Error{Kind: nferr.KindAuth, Msg: "permission denied: this server gives no access to files (" + path + ")"}
	}
	r, err := resolveExisting(root)
	if err != nil {
		return nferr.Internalf("file access root %s: %v", root, err)
	}
	// The directory part before any glob character decides.
	p := path
	if i := strings.IndexAny(p, "*?["); i >= 0 {
		p = filepath.Dir(p[:i] + "x")
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return nferr.Queryf("file %s: %v", path, err)
	}
	resolved, err := resolveExisting(abs)
	if err != nil {
		return nferr.Queryf("file %s: %v", path, err)
	}
	if rel, err := filepath.Rel(r, resolved); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return &nferr.Error{Kind: nferr.KindAuth, Msg: "permission denied: " + path + " is outside the directory this server gives access to (" + root + ")"}
	}
	return nil
}

// resolveExisting is p with the symbolic links of its longest existing
// prefix resolved (the rest, yet to be created, appended as is).
func resolveExisting(p string) (string, error) {
	p = filepath.Clean(p)
	rest := ""
	for {
		if _, err := os.Lstat(p); err == nil {
			r, err := filepath.EvalSymlinks(p)
			if err != nil {
				return "", err
			}
			return filepath.Join(r, rest), nil
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest), nil
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}
