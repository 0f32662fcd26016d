package main

import (
	"context"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/tpch"
)

// The TPC-H runner of PostgreSQL clients (pgx): `nicflow bench load`'s
// clients and the PostgreSQL protocol tests run the queries through it and
// check its answers with tpch.CheckAnswer, as `tpch run --verify` does.

// pgText is a value pgx decoded (binary or text format) in TPC-H's
// answer form.
func pgText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case int16, int32, int64:
		return fmt.Sprint(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		return x.Format("2006-01-02")
	case pgtype.Numeric:
		if !x.Valid {
			return ""
		}
		s := new(big.Int).Set(x.Int).String()
		neg := strings.HasPrefix(s, "-")
		s = strings.TrimPrefix(s, "-")
		if x.Exp < 0 {
			for len(s) <= int(-x.Exp) {
				s = "0" + s
			}
			s = s[:len(s)+int(x.Exp)] + "." + s[len(s)+int(x.Exp):]
		} else {
			s += strings.Repeat("0", int(x.Exp))
		}
		if neg {
			s = "-" + s
		}
		return s
	}
	return fmt.Sprint(v)
}

// statementRunner runs a TPC-H query text (a script for Q15) statement
// by statement through run, which returns a statement's columns and rows
// (none for a statement without rows); the answer is the last rows.
func statementRunner(run func(ctx context.Context, stmt string) ([]string, [][]string, error)) textRunner {
	return func(ctx context.Context, text string, keep bool) (tpch.Result, int64, error) {
		stmts, err := engine.SplitScript(text)
		if err != nil {
			return tpch.Result{}, 0, err
		}
		var out tpch.Result
		for _, st := range stmts {
			cols, rows, err := run(ctx, st)
			if err != nil {
				return tpch.Result{}, 0, err
			}
			if len(cols) > 0 {
				out = tpch.Result{Columns: cols, Rows: rows}
			}
		}
		return out, -1, nil
	}
}

// pgRunner runs TPC-H query texts through a pgx connection.
func pgRunner(c *pgx.Conn) textRunner {
	return statementRunner(func(ctx context.Context, st string) ([]string, [][]string, error) {
		rows, err := c.Query(ctx, st)
		if err != nil {
			return nil, nil, err
		}
		defer rows.Close()
		var cols []string
		for _, f := range rows.FieldDescriptions() {
			cols = append(cols, f.Name)
		}
		var out [][]string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				return nil, nil, err
			}
			row := make([]string, len(vals))
			for i, v := range vals {
				row[i] = pgText(v)
			}
			out = append(out, row)
		}
		return cols, out, rows.Err()
	})
}
