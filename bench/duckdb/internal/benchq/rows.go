package benchq

import (
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// QueryRows runs one query and returns its column names and rows, each
// value as CellText when keep (else empty rows that only count).
func QueryRows(db *sql.DB, stmt string, keep bool) ([]string, [][]string, error) {
	rows, err := db.Query(stmt)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out [][]string
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		var row []string
		if keep {
			row = make([]string, len(vals))
			for i, v := range vals {
				row[i] = CellText(v)
			}
		}
		out = append(out, row)
	}
	return cols, out, rows.Err()
}

// CellText renders a DuckDB value as nicflow prints it in CSV (and as
// tpch.Result's canonical text): NULL empty, decimals with their scale,
// dates YYYY-MM-DD, timestamps YYYY-MM-DD HH:MM:SS[.ffffff], booleans t/f.
func CellText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case duckdb.Decimal:
		return x.String()
	case time.Time:
		if x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 && x.Nanosecond() == 0 {
			return x.Format("2006-01-02")
		}
		return x.Format("2006-01-02 15:04:05.999999")
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case []byte:
		return string(x)
	case bool:
		if x {
			return "t"
		}
		return "f"
	}
	return fmt.Sprint(v)
}
