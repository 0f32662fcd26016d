package engine

import (
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
)

// FileAccessNone is the Options.FileAccess that forbids every file path.
const FileAccessNone = "none"

// fileAccess checks that a statement may use path (a file, a directory or
// a glob) under the file access policy access (Options.FileAccess) and
// returns the file access root to open it through: "" allows anything
// (nil root: paths open as named); FileAccessNone nothing; a directory
// only paths inside it (storage.FileRoot, files_root.go: every file a
// glob matches, every file of a directory, every path component, links
// and ".." included, resolved inside the root when the file is opened).
// A refusal is KindAuth, names the path and the root, and does not tell
// whether anything outside the root exists.
func fileAccess(db *storage.DB, access, path string) (*storage.FileRoot, error) {
	switch access {
	case "":
		return nil, nil
	case FileAccessNone:
		return nil, &nferr.Error{Kind: nferr.KindAuth, Msg: "permission denied: this server gives no access to files (" + path + ")"}
	}
	r, err := db.FileRoot(access)
	if err != nil {
		return nil, err
	}
	if err := r.Check(path); err != nil {
		return nil, err
	}
	return r, nil
}
