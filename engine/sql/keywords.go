package sql

import "github.com/nicflow/nicflow/internal/sqlkw"

// IsReserved reports whether word (lower case) is a reserved keyword, which
// the deparser must quote when it is used as a name (sqlkw.IsReserved).
func IsReserved(word string) bool { return sqlkw.IsReserved(word) }
