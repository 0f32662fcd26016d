// Package tpchq holds the 22 TPC-H query texts with their validation
// parameters (queries/qNN.sql, see queries/README.md): the one copy that
// the tpch package (which turns them into templates) and the tests of any
// package read. A leaf: it imports nothing of nicflow.
package tpchq

import (
	"embed"
	"fmt"
)

//go:embed queries/*.sql
var queryFS embed.FS

// NumQueries is the number of TPC-H queries.
const NumQueries = 22

// Text returns query q's validation text (1 <= q <= 22) exactly as stored:
// the validation parameters for SF 1 (Q11 FRACTION 0.0001).
func Text(q int) (string, error) {
	if q < 1 || q > NumQueries {
		return "", fmt.Errorf("no TPC-H query %d (1-%d)", q, NumQueries)
	}
	b, err := queryFS.ReadFile(fmt.Sprintf("queries/q%02d.sql", q))
	return string(b), err
}
