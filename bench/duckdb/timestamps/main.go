// Command timestamps compares nicflow's TIMESTAMP and TIMESTAMPTZ support
// with DuckDB's on random data: for each seed it creates the same small
// table t (id INTEGER, a TIMESTAMP, b TIMESTAMP, d DATE; about one NULL in
// six, years 1900 to 2100, random microseconds, repeated values) in both
// engines and checks that each query returns the same rows. It exits 1 on
// any difference.
//
//	cd bench/duckdb && CGO_ENABLED=1 go run ./timestamps --seeds 20
//
// The queries cover what nicflow supports: literals, casts between date,
// timestamp, timestamptz and varchar, timestamp +/- interval, interval +
// timestamp, timestamp - timestamp, comparisons with dates, EXTRACT and
// date_part, date_trunc, to_timestamp, make_timestamp, min/max/count
// (distinct), GROUP BY, ORDER BY, joins and window min/max; and TIME
// (the time of day of those timestamps).
//
// Both sides' values are turned into one canonical text here (not by
// either engine's own printing): nicflow's from its Arrow record batches,
// DuckDB's from database/sql. Timestamps print as YYYY-MM-DD
// HH:MM:SS[.ffffff without trailing zeros], "+00" appended for a
// TIMESTAMPTZ; dates as YYYY-MM-DD; intervals as their three fields
// ("<months>mo <days>d <micros>us"), compared exactly; doubles as "~" and
// the shortest round-trip form, compared within 1e-9 relative (and with an
// integer of the same value: only the value is checked, not int vs double).
//
// DuckDB runs with integer division, NULLs last ascending and first
// descending, and time zone UTC, as nicflow (and PostgreSQL) read SQL.
// Where DuckDB and PostgreSQL differ and nicflow follows PostgreSQL, or
// nicflow made a choice of its own, the query has a DuckDB spelling that
// computes nicflow's answer (query.note says why); --native runs DuckDB's
// own spelling instead, to show those differences. --gaps adds queries
// nicflow does not support yet. A query both engines reject counts as
// agreeing.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/nicflow/nicflow/engine"
)

// query is one comparison.
type query struct {
	sql string
	// duck, when set, is DuckDB's spelling of sql: the same answer where
	// DuckDB's semantics differ (note says how). native is DuckDB's own
	// spelling (sql when empty), run instead of duck with --native to show
	// the difference.
	duck, native, note string
	// ordered: the query orders its rows totally (compared in order);
	// otherwise the rows are compared as multisets.
	ordered bool
}

// queries are the comparisons; t is the random table.
var queries = []query{
	// Loading and printing: literals read back unchanged.
	{sql: "select id, a, b, d from t order by id", ordered: true},
	{sql: "select timestamp '2020-01-02 03:04:05.5', timestamp '1969-12-31 23:59:59.999999', cast('1900-02-28 00:00:00.000001' as timestamp), timestamp '2100-12-31 23:59:59', date '2000-02-29'", ordered: true},

	// Arithmetic with intervals: months first (the day clamped to the
	// month's end), then days, then the time.
	{sql: "select id, a + interval '1 month', a - interval '1 month', b + interval '3 days 04:05:06' from t order by id", ordered: true},
	{sql: "select id, a + interval '-1 year', interval '1 month' + b, a - interval '3 days 04:05:06', a + interval '1 year 2 months 3 days 04:05:06.789' from t order by id", ordered: true},
	{sql: "select id, a + interval '-2 months 10 days', b - interval '-1 day -00:00:00.000001', interval '36 hours' + a, d + interval '1 hour' from t order by id", ordered: true},
	{sql: "select id, a + interval '1.5 hours', a - interval '2 weeks', a + interval '1 day -02:00', b + interval '-1 month -1 day', b - interval '11 months 30 days 23:59:59.999999' from t order by id", ordered: true},
	{sql: "select id, cast(cast(a as date) + interval '1 month' as timestamp), date_trunc('month', a) - interval '1 day', date_trunc('year', b) + interval '1 year' - interval '0.000001 seconds' from t order by id",
		duck: "select id, cast(cast(a as date) + interval '1 month' as timestamp), cast(date_trunc('month', a) as timestamp) - interval '1 day', cast(date_trunc('year', b) as timestamp) + interval '1 year' - interval '0.000001 seconds' from t order by id",
		note: truncNote, ordered: true},
	// A date plus whole months: a DATE in nicflow, a TIMESTAMP in DuckDB
	// and PostgreSQL; the cast compares the values only.
	{sql: "select id, cast(d + interval '1 month' as timestamp), cast(d - interval '1 year' as timestamp) from t order by id", ordered: true},
	// timestamp - timestamp: days and time, never months.
	{sql: "select id, a - b, b - a, a - d from t order by id", ordered: true},
	{sql: "select id, b + (a - b), a + (b - a) - (b - a) from t order by id", ordered: true},

	// EXTRACT / date_part.
	{sql: "select id, extract(year from a), extract(quarter from a), extract(month from a), extract(week from a), extract(day from a) from t order by id", ordered: true},
	{sql: "select id, extract(dow from a), extract(isodow from a), extract(doy from a), extract(hour from a), extract(minute from a), extract(second from a) from t order by id", ordered: true},
	{sql: "select id, extract(millisecond from a), extract(microsecond from a), extract(epoch from a) from t order by id", ordered: true},
	// epoch_ms is DuckDB's (PostgreSQL has none), an extract field and a
	// function in nicflow, truncated toward zero as DuckDB's.
	{sql: "select id, date_part('epoch_ms', a), epoch_ms(b) from t order by id", duck: "select id, epoch_ms(a), epoch_ms(b) from t order by id", ordered: true},
	{sql: "select id, date_part('year', b), date_part('week', b), date_part('isodow', b), date_part('second', b), date_part('epoch', b) from t order by id", ordered: true},
	{sql: "select id, extract(year from d), extract(dow from d), extract(week from d), extract(doy from d), extract(epoch from d) from t order by id", ordered: true},

	// date_trunc on timestamps (weeks start on Monday). DuckDB 1.4 returns
	// a DATE for units of a day and more (given a constant unit), PostgreSQL
	// and nicflow a TIMESTAMP.
	{
		sql:     "select id, date_trunc('microsecond', a), date_trunc('millisecond', a), date_trunc('second', a), date_trunc('minute', a), date_trunc('hour', a), date_trunc('day', a) from t order by id",
		duck:    "select id, date_trunc('microsecond', a), date_trunc('millisecond', a), date_trunc('second', a), date_trunc('minute', a), date_trunc('hour', a), cast(date_trunc('day', a) as timestamp) from t order by id",
		note:    truncNote,
		ordered: true,
	},
	{
		sql:     "select id, date_trunc('week', a), date_trunc('month', a), date_trunc('quarter', a), date_trunc('year', a), date_trunc('decade', a) from t order by id",
		duck:    "select id, cast(date_trunc('week', a) as timestamp), cast(date_trunc('month', a) as timestamp), cast(date_trunc('quarter', a) as timestamp), cast(date_trunc('year', a) as timestamp), cast(date_trunc('decade', a) as timestamp) from t order by id",
		note:    truncNote,
		ordered: true,
	},
	{
		sql:     "select id, date_trunc('century', a), date_trunc('millennium', a) from t order by id",
		duck:    "select id, cast(date_trunc('century', a - interval 1 year) as timestamp) + interval 1 year, cast(date_trunc('millennium', a - interval 1 year) as timestamp) + interval 1 year from t order by id",
		note:    "PostgreSQL's centuries and millennia start in years ending in 01 (2000 is in the century starting 1901), DuckDB's in years ending in 00; " + truncNote,
		ordered: true,
	},

	// Casts.
	{sql: "select id, cast(a as date), cast(d as timestamp), cast(a as varchar), cast(a as timestamptz), cast(cast(a as timestamptz) as timestamp) from t order by id", ordered: true},
	{sql: "select id, cast(cast(a as varchar) as timestamp), cast(cast(d as varchar) as timestamp), cast(cast(a as timestamptz) as varchar), cast(d as timestamptz) from t order by id", ordered: true},
	{sql: "select id, cast(a as timestamptz) + interval '1 month', cast(a as timestamptz) - cast(b as timestamptz), extract(hour from cast(b as timestamptz)) from t order by id", ordered: true},
	{sql: "select id, date_trunc('month', cast(a as timestamptz)), date_trunc('hour', cast(b as timestamptz)), extract(epoch from cast(a as timestamptz)), extract(doy from cast(b as timestamptz)) from t order by id", ordered: true},

	// CASE, COALESCE, DISTINCT, UNION and IN lists over timestamps, mixed
	// with dates.
	{sql: "select id, coalesce(a, b), coalesce(a, d), case when a > b then a else b end, case when a is null then d end from t order by id", ordered: true},
	{sql: "select distinct date_trunc('month', a) from t", duck: "select distinct cast(date_trunc('month', a) as timestamp) from t", note: truncNote},
	{sql: "select a from t union select b from t"},
	{sql: "select d from t union all select a from t"},
	{sql: "select id from t where a in (timestamp '2000-01-01', '1999-12-31 23:59:59.999999', date '1970-01-01') or b in (select a from t where id < 20)"},

	// Constructors.
	// to_timestamp(x) is round(x * 1e6) microseconds. When the product is
	// exactly k + 0.5 (1 / 2e6 seconds, but also 4302465995.003485 seconds:
	// the double nearest is 4302465995.0034847..., times 1e6 rounds to
	// ...484.5), nicflow rounds away from zero, DuckDB to even (PostgreSQL
	// rounds to even after moving to its 2000 epoch, so its halves fall
	// elsewhere: either way); to_timestamp_away is nicflow's rounding.
	{
		sql:     "select id, to_timestamp(extract(epoch from a)), to_timestamp(id * 12345678.125), to_timestamp(-id * 1234567.000001) from t order by id",
		duck:    "select id, to_timestamp_away(extract(epoch from a)), to_timestamp_away(id * 12345678.125), to_timestamp_away(-id * 1234567.000001) from t order by id",
		native:  "select id, to_timestamp(extract(epoch from a)), to_timestamp(id * 12345678.125), to_timestamp(-id * 1234567.000001) from t order by id",
		note:    roundNote,
		ordered: true,
	},
	{
		sql:     "select id, to_timestamp(cast(id as double) / 2000000), to_timestamp(-cast(id as double) / 2000000), to_timestamp(cast(id as double) * 1000 + 0.0000005) from t order by id",
		duck:    "select id, to_timestamp_away(cast(id as double) / 2000000), to_timestamp_away(-cast(id as double) / 2000000), to_timestamp_away(cast(id as double) * 1000 + 0.0000005) from t order by id",
		note:    roundNote,
		ordered: true,
	},
	// to_timestamp takes a double: a DECIMAL argument converts first, to
	// the nearest double. Checked exactly (a 1-ulp error is inside the
	// tolerance of doubles but moves a timestamp a microsecond when x * 1e6
	// lands on a half): a wide decimal (here DECIMAL(38,6)) must convert
	// as a narrow one does.
	{sql: "select id, cast(cast(id * 1234567.000001 as decimal(38,6)) as double) = cast(cast(id * 1234567.000001 as decimal(18,6)) as double) from t order by id", ordered: true},
	{sql: "select id, make_timestamp(extract(year from a), extract(month from a), extract(day from a), extract(hour from a), extract(minute from a), cast(extract(microsecond from a) as double) / 1000000) from t order by id", ordered: true},
	{sql: "select id, make_timestamp(1900 + id, id % 12 + 1, id % 28 + 1, id % 24, id % 60, id % 420 / 7.0) from t order by id", ordered: true},

	// Comparisons (a date is its midnight).
	{sql: "select id, a < b, a = b, a >= d, a = d, a <> b, a between d and b from t order by id", ordered: true},
	{sql: "select id, cast(a as timestamptz) < d, cast(b as timestamptz) >= cast(a as date), cast(a as timestamptz) between b and d from t order by id", ordered: true},
	{sql: "select id, a > '2000-01-01', a <= timestamp '1999-12-31 23:59:59.999999', d < a, a is distinct from b, cast(a as timestamptz) = a from t order by id", ordered: true},

	// Filters.
	{sql: "select id from t where a > b"},
	{sql: "select id, a from t where a = d"},
	{sql: "select id from t where a between timestamp '1950-01-01' and date '2050-06-30'"},
	{sql: "select id, a from t where a >= '2000-01-01 12:00:00.5' and b is null"},
	{sql: "select id from t where b + interval '1000 days' < a or a - interval '1 day 00:00:00.5' = b"},
	{sql: "select id from t where a + interval '1 month' > b - interval '3 days 04:05:06'"},
	{sql: "select id from t where extract(year from a) = extract(year from b) or date_trunc('month', a) = date_trunc('month', d)"},
	{sql: "select id from t where a in (select b from t) and d not in (select cast(a as date) from t where a is not null)"},

	// Aggregates and grouping.
	{sql: "select min(a), max(a), count(distinct a), min(b), max(b), count(distinct b), count(a), min(d), max(d) from t"},
	{sql: "select min(a + interval '1 month'), max(b - interval '-1 year'), max(cast(a as timestamptz)), min(cast(b as timestamptz)), count(distinct date_trunc('year', a)) from t"},
	{
		sql:  "select date_trunc('year', a), count(*), min(b), max(b) from t group by 1",
		duck: "select cast(date_trunc('year', a) as timestamp), count(*), min(b), max(b) from t group by 1",
		note: truncNote,
	},
	{
		sql:  "select date_trunc('decade', a) as k, count(distinct b), max(a) from t group by k having count(*) > 1",
		duck: "select cast(date_trunc('decade', a) as timestamp) as k, count(distinct b), max(a) from t group by k having count(*) > 1",
		note: truncNote,
	},
	{sql: "select a, count(*) from t group by a"},
	{sql: "select a, b, count(*) from t group by a, b having count(*) > 1"},
	{sql: "select extract(dow from a), min(a), max(a), count(distinct cast(a as date)) from t group by 1"},
	{sql: "select cast(a as date), count(*), max(d) from t group by 1"},
	{sql: "select cast(b as timestamptz), count(distinct a), min(cast(a as timestamptz)) from t group by 1"},

	// Joins on timestamps (and a date against a timestamp).
	{sql: "select x.id, y.id from t x join t y on x.a = y.b"},
	{sql: "select x.id, y.id, x.a from t x left join t y on x.a = y.a and x.id < y.id"},
	{sql: "select x.id, y.id from t x join t y on x.d = y.a"},
	{sql: "select x.id, y.id from t x join t y on x.a = cast(y.b as timestamptz)"},
	{sql: "select x.id, count(*) from t x join t y on date_trunc('year', x.a) = date_trunc('year', y.b) group by x.id"},
	{sql: "select x.id, y.id from t x join t y on x.a < y.b and y.b < x.a + interval '30 days'"},

	// Windows.
	{sql: "select id, max(a) over (partition by extract(year from b) / 10), min(b) over (partition by date_trunc('year', a)) from t order by id", ordered: true},
	{sql: "select id, max(a) over (order by id), min(a) over (order by id rows between 2 preceding and 2 following) from t order by id", ordered: true},
	{sql: "select id, max(a) over (partition by d is null order by b, id), min(d) over (order by a, id) from t order by id", ordered: true},
	{sql: "select id, lag(a) over (order by id), first_value(b) over (partition by extract(year from a) / 50 order by id) from t order by id", ordered: true},

	// ORDER BY a timestamp, an interval, a date.
	{sql: "select id, a from t order by a, id", ordered: true},
	{sql: "select id, a, b from t order by b desc, id limit 20", ordered: true},
	{sql: "select id, a - b from t order by extract(epoch from a) - extract(epoch from b), id", ordered: true},
	{sql: "select id, d from t order by d nulls first, id", ordered: true},
}

// roundNote explains the DuckDB spelling of to_timestamp.
const roundNote = "to_timestamp rounds a half microsecond away from zero in nicflow, to even in DuckDB"

// truncNote explains the casts of DuckDB's date_trunc.
const truncNote = "DuckDB 1.4's date_trunc(unit, timestamp) is a DATE for day and longer units, PostgreSQL's a TIMESTAMP"

// Intervals: compared (months as 30 days), multiplied and divided,
// fractional and sub-second literals, added to dates at run time.
var intervalQueries = []query{
	{sql: "select id, d + (a - d) from t order by id", ordered: true},
	{sql: "select id from t where a - b > interval '1000 days'"},
	{sql: "select id from t where a - b = interval '00:00:00' or b - a = interval '1 day 00:00:00.5'"},
	{sql: "select id, a + interval '1.5 days', a - interval '2.5 months', a + interval '1 microsecond', a - interval '3 milliseconds' from t order by id", ordered: true},
	{sql: "select id, a + interval '1 day' * 3, a - 2 * interval '1 month', b + (a - b) * 2 from t order by id", ordered: true},
	{sql: "select id, a - b from t where a is not null and b is not null order by a - b, id", ordered: true},
	{sql: "select max(a - b), min(a - b) from t"},
	// DuckDB's part functions and date_diff.
	{sql: "select id, year(a), month(a), day(a), hour(a), minute(a), second(a), dayofweek(a), dayofyear(a), dayname(a), monthname(b), last_day(d) from t order by id", ordered: true},
	{sql: "select id, date_diff('day', a, b), date_diff('month', a, b), date_diff('year', a, b), date_diff('hour', a, b), date_diff('week', d, a), date_diff('quarter', d, b), date_diff('minute', a, b) from t order by id", ordered: true},
}

// Times (TIME, the time of day of a and b): casts, arithmetic with
// intervals (wrapping around midnight), time - time, date + time,
// extract, comparisons, grouping, ordering and joins.
var timeQueries = []query{
	{sql: "select id, cast(a as time), cast(b as time), cast(cast(a as time) as varchar), cast(cast(cast(b as time) as varchar) as time) from t order by id", ordered: true},
	{sql: "select id, cast(a as time) + interval '90 minutes', cast(b as time) - interval '13 hours 0.5 seconds', interval '23:59:59.999999' + cast(a as time) from t order by id", ordered: true},
	// DuckDB has no time - time: the difference of two timestamps on one day.
	{
		sql:     "select id, cast(a as time) - cast(b as time), d + cast(a as time), cast(b as time) + d from t order by id",
		duck:    "select id, (date '2000-01-01' + cast(a as time)) - (date '2000-01-01' + cast(b as time)), d + cast(a as time), cast(b as time) + d from t order by id",
		note:    "DuckDB has no time - time (PostgreSQL's is an interval of time)",
		ordered: true,
	},
	{sql: "select id, extract(hour from cast(a as time)), extract(minute from cast(a as time)), extract(second from cast(a as time)), extract(millisecond from cast(a as time)), extract(microsecond from cast(a as time)) from t order by id", ordered: true},
	{sql: "select id, cast(a as time) < cast(b as time), cast(a as time) = cast(b as time), cast(a as time) between '06:00' and time '18:00:00.5' from t order by id", ordered: true},
	{sql: "select min(cast(a as time)), max(cast(b as time)), count(distinct cast(a as time)) from t"},
	{sql: "select date_trunc('hour', a), count(*), min(cast(a as time)), max(cast(a as time)) from t group by 1"},
	{sql: "select cast(a as time) as k, count(*) from t group by k"},
	{sql: "select id, cast(a as time) from t order by cast(a as time) desc, id", ordered: true},
	{sql: "select x.id, y.id from t x join t y on cast(x.a as time) = cast(y.b as time)"},
	{sql: "select id, make_time(extract(hour from a), extract(minute from a), cast(extract(microsecond from a) as double) / 1000000) from t order by id", ordered: true},
}

// gaps are queries nicflow does not run yet (--gaps runs them too):
// epoch_ms of a date. DuckDB runs them
// all.
var gaps = []query{
	{sql: "select id, date_part('epoch_ms', d) from t order by id", native: "select id, epoch_ms(d) from t order by id", ordered: true},
}

func main() {
	seeds := flag.Int("seeds", 20, "random databases to compare on")
	rows := flag.Int("rows", 200, "rows of the table")
	verbose := flag.Bool("v", false, "print every query's outcome")
	withGaps := flag.Bool("gaps", false, "also run the queries nicflow does not support yet")
	native := flag.Bool("native", false, "run DuckDB's own spelling of the queries whose semantics differ (shows the differences)")
	flag.Parse()
	qs := append(slices.Clone(queries), intervalQueries...)
	qs = append(qs, timeQueries...)
	if *withGaps {
		qs = append(qs, gaps...)
	}
	if *native {
		qs = slices.Clone(qs)
		for i := range qs {
			if qs[i].duck != "" || qs[i].native != "" {
				qs[i].duck = qs[i].native // the query itself when empty
			}
		}
	}
	if err := run(qs, *seeds, *rows, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "timestamps:", err)
		os.Exit(1)
	}
}

// duckSettings make DuckDB read SQL as nicflow does. TimeZone needs ICU
// (linked into these bindings); its failure is ignored. The macro is
// nicflow's to_timestamp for the DuckDB spellings: microseconds rounded
// half away from zero (DuckDB's round on a double), not to even.
var duckSettings = []struct {
	stmt     string
	optional bool
}{
	{"SET integer_division = true", false},
	{"SET default_null_order = 'nulls_last_on_asc_first_on_desc'", false},
	{"SET TimeZone = 'UTC'", true},
	{"CREATE MACRO to_timestamp_away(x) AS cast(make_timestamp(cast(round(cast(x as double) * 1000000) as bigint)) as timestamptz)", false},
}

func run(queries []query, seeds, rows int, verbose bool) error {
	ctx := context.Background()
	diffs, total, nonEmpty := 0, 0, 0
	start := time.Now()
	for seed := 1; seed <= seeds; seed++ {
		script := table(rand.New(rand.NewSource(int64(seed))), rows)
		dir, err := os.MkdirTemp("", "nicflow-ts")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		s, err := engine.Open(dir, engine.Options{Parallelism: 2})
		if err != nil {
			return err
		}
		if _, _, err := engine.ScriptText(ctx, s, script, false); err != nil {
			s.Close()
			return fmt.Errorf("nicflow: loading: %w", err)
		}
		db, err := sql.Open("duckdb", "")
		if err != nil {
			s.Close()
			return err
		}
		db.SetMaxOpenConns(1) // the SETs hold for every query
		for _, set := range duckSettings {
			if _, err := db.Exec(set.stmt); err != nil && !set.optional {
				s.Close()
				db.Close()
				return fmt.Errorf("duckdb: %s: %w", set.stmt, err)
			}
		}
		for _, stmt := range strings.Split(script, ";") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			if _, err := db.Exec(stmt); err != nil {
				s.Close()
				db.Close()
				return fmt.Errorf("duckdb: %s: %w", stmt, err)
			}
		}
		for _, q := range queries {
			total++
			dq := q.sql
			if q.duck != "" {
				dq = q.duck
			} else if q.native != "" {
				dq = q.native
			}
			want, werr := duckRows(db, dq)
			got, gerr := nicflowRows(ctx, s, q.sql)
			var diff string
			switch {
			case werr != nil && gerr != nil:
				// Both reject the query (a value out of range): agreed.
				if verbose {
					fmt.Printf("seed %d: both failed: %s\n  nicflow: %v\n  DuckDB: %v\n", seed, q.sql, gerr, werr)
				}
				continue
			case werr != nil:
				diff = "duckdb failed: " + werr.Error()
			case gerr != nil:
				diff = "nicflow failed: " + gerr.Error()
			default:
				diff = compare(want, got, q.ordered)
			}
			if len(want) > 0 {
				nonEmpty++
			}
			if diff != "" {
				diffs++
				fmt.Printf("seed %d: DIFFERS: %s\n  %s\n", seed, q.sql, diff)
				if dq != q.sql {
					fmt.Printf("  DuckDB ran: %s\n", dq)
				}
				if q.note != "" {
					fmt.Printf("  (known difference: %s)\n", q.note)
				}
			} else if verbose {
				fmt.Printf("seed %d: ok (%d rows): %s\n", seed, len(want), q.sql)
			}
		}
		s.Close()
		db.Close()
	}
	fmt.Printf("%d queries x %d seeds: %d differ, %d agree (%d with rows) in %s\n", len(queries), seeds, diffs, total-diffs, nonEmpty, time.Since(start).Round(time.Millisecond))
	if diffs > 0 {
		return fmt.Errorf("%d results differ", diffs)
	}
	return nil
}

// ---------------------------------------------------------------- data

// Bounds of the random timestamps: 1900-01-01 to the end of 2100.
var (
	loUs = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	hiUs = time.Date(2101, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
)

const usPerDay = 86_400_000_000

// table is the script that creates t with rows random rows. Timestamps
// come from one pool shared by a and b (a quarter of them repeat an
// earlier value, so grouping and a = b joins find matches); their
// precision varies (microseconds, milliseconds, seconds, whole hours,
// midnight) and some fall on the last days of a month (clamping). d is,
// a quarter of the time, the date of the row's a (so a = d finds
// midnights), else a random date or the date of a pooled timestamp. About
// one value in six is NULL.
func table(r *rand.Rand, rows int) string {
	var pool []int64
	ts := func() string {
		if r.Intn(6) == 0 {
			return "NULL"
		}
		var us int64
		if len(pool) > 0 && r.Intn(4) == 0 {
			us = pool[r.Intn(len(pool))]
		} else {
			us = loUs + r.Int63n(hiUs-loUs)
			switch r.Intn(8) {
			case 0, 1: // microseconds
			case 2, 3:
				us -= us % 1000
			case 4:
				us -= us % 1_000_000
			case 5:
				us -= us % 3_600_000_000
			case 6: // midnight (Go's % truncates: before 1970 this rounds up, still to a midnight)
				us -= us % usPerDay
			case 7: // the 29th..31st of a month, when it has one
				t := time.UnixMicro(us).UTC()
				day := 29 + r.Intn(3)
				if last := time.Date(t.Year(), t.Month()+1, 0, 0, 0, 0, 0, time.UTC).Day(); day > last {
					day = last
				}
				us = time.Date(t.Year(), t.Month(), day, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC).UnixMicro()
			}
			pool = append(pool, us)
		}
		return "'" + formatTS(us, false) + "'"
	}
	date := func(a string) string {
		if r.Intn(6) == 0 {
			return "NULL"
		}
		var days int64
		if a != "NULL" && r.Intn(4) == 0 {
			return a[:11] + "'" // the date of this row's a
		}
		if len(pool) > 0 && r.Intn(3) == 0 {
			days = floorDiv(pool[r.Intn(len(pool))], usPerDay)
		} else {
			days = floorDiv(loUs+r.Int63n(hiUs-loUs), usPerDay)
		}
		return "'" + formatDate(days) + "'"
	}
	var b strings.Builder
	b.WriteString("CREATE TABLE t (id INTEGER, a TIMESTAMP, b TIMESTAMP, d DATE);\n")
	b.WriteString("INSERT INTO t VALUES ")
	for i := 1; i <= rows; i++ {
		if i > 1 {
			b.WriteString(",\n  ")
		}
		a := ts()
		fmt.Fprintf(&b, "(%d, %s, %s, %s)", i, a, ts(), date(a))
	}
	b.WriteString(";\n")
	return b.String()
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// ---------------------------------------------------------------- canonical text

// formatTS is the canonical text of a timestamp of us microseconds since
// 1970-01-01 00:00:00: YYYY-MM-DD HH:MM:SS, then the fraction without
// trailing zeros, then "+00" for a TIMESTAMPTZ (zone).
func formatTS(us int64, zone bool) string {
	s := time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.999999")
	if zone {
		s += "+00"
	}
	return s
}

// formatTime is the canonical text of a time of us microseconds since
// midnight: HH:MM:SS, then the fraction without trailing zeros (24:00:00
// possible).
func formatTime(us int64) string {
	s := fmt.Sprintf("%02d:%02d:%02d", us/3_600_000_000, us/60_000_000%60, us/1_000_000%60)
	if f := us % 1_000_000; f != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%06d", f), "0")
	}
	return s
}

// formatDate is the canonical text of the date days after 1970-01-01.
func formatDate(days int64) string {
	return time.Unix(days*86400, 0).UTC().Format("2006-01-02")
}

// formatInterval is the canonical text of an interval: its three fields,
// so that intervals compare exactly field by field.
func formatInterval(months, days int64, micros int64) string {
	return fmt.Sprintf("%dmo %dd %dus", months, days, micros)
}

// formatFloat marks a double with "~" (compared within a tolerance).
func formatFloat(f float64) string { return "~" + strconv.FormatFloat(f, 'g', -1, 64) }

// nicflowRows runs q in nicflow; each row is its cells' canonical text
// (NULL empty) joined by '|'.
func nicflowRows(ctx context.Context, s *engine.Session, q string) ([]string, error) {
	r, err := s.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if r.Schema == nil {
		return nil, fmt.Errorf("no rows: %s", r.Status)
	}
	var out []string
	for {
		rec, err := r.Next()
		if err != nil {
			return nil, err
		}
		if rec == nil {
			return out, nil
		}
		cells := make([]string, rec.NumCols())
		for i := 0; i < int(rec.NumRows()); i++ {
			for c := range cells {
				v, err := arrowCell(rec.Column(c), i)
				if err != nil {
					return nil, err
				}
				cells[c] = v
			}
			out = append(out, strings.Join(cells, "|"))
		}
	}
}

// arrowCell is the canonical text of row i of a nicflow column.
func arrowCell(a arrow.Array, i int) (string, error) {
	if a.IsNull(i) || a.DataType().ID() == arrow.NULL {
		return "", nil
	}
	switch a := a.(type) {
	case *array.Int8:
		return strconv.FormatInt(int64(a.Value(i)), 10), nil
	case *array.Int16:
		return strconv.FormatInt(int64(a.Value(i)), 10), nil
	case *array.Int32:
		return strconv.FormatInt(int64(a.Value(i)), 10), nil
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10), nil
	case *array.Float64:
		return formatFloat(a.Value(i)), nil
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i)), nil
	case *array.String:
		return strings.Clone(a.Value(i)), nil
	case *array.Date32:
		return formatDate(int64(a.Value(i))), nil
	case *array.Timestamp:
		t := a.DataType().(*arrow.TimestampType)
		if t.Unit != arrow.Microsecond {
			return "", fmt.Errorf("unexpected timestamp unit %s", t.Unit)
		}
		return formatTS(int64(a.Value(i)), t.TimeZone != ""), nil
	case *array.Time64:
		if u := a.DataType().(*arrow.Time64Type).Unit; u != arrow.Microsecond {
			return "", fmt.Errorf("unexpected time unit %s", u)
		}
		return formatTime(int64(a.Value(i))), nil
	case *array.MonthDayNanoInterval:
		v := a.Value(i)
		if v.Nanoseconds%1000 != 0 {
			return "", fmt.Errorf("interval with nanoseconds: %v", v)
		}
		return formatInterval(int64(v.Months), int64(v.Days), v.Nanoseconds/1000), nil
	case *array.Decimal128:
		t := a.DataType().(*arrow.Decimal128Type)
		return a.Value(i).ToString(t.Scale), nil
	case *array.Decimal64:
		t := a.DataType().(*arrow.Decimal64Type)
		return a.Value(i).ToString(t.Scale), nil
	}
	return "", fmt.Errorf("cannot compare values of type %s", a.DataType())
}

// duckRows runs q in DuckDB; each row is its cells' canonical text (NULL
// empty) joined by '|'.
func duckRows(db *sql.DB, q string) ([]string, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	vals := make([]any, len(types))
	ptrs := make([]any, len(types))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []string
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		cells := make([]string, len(vals))
		for i, v := range vals {
			c, err := duckCell(types[i].DatabaseTypeName(), v)
			if err != nil {
				return nil, err
			}
			cells[i] = c
		}
		out = append(out, strings.Join(cells, "|"))
	}
	return out, rows.Err()
}

// duckCell is the canonical text of a DuckDB value of type typ (its
// DatabaseTypeName).
func duckCell(typ string, v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case time.Time:
		switch typ {
		case "DATE":
			return x.UTC().Format("2006-01-02"), nil
		case "TIMESTAMP":
			return formatTS(x.UnixMicro(), false), nil
		case "TIMESTAMPTZ":
			return formatTS(x.UnixMicro(), true), nil
		case "TIME":
			y, m, d := x.Date()
			return formatTime(x.Sub(time.Date(y, m, d, 0, 0, 0, 0, x.Location())).Microseconds()), nil
		}
		return "", fmt.Errorf("unexpected time value of type %s", typ)
	case duckdb.Interval:
		return formatInterval(int64(x.Months), int64(x.Days), x.Micros), nil
	case float64:
		return formatFloat(x), nil
	case float32:
		return formatFloat(float64(x)), nil
	case []byte:
		return string(x), nil
	case *big.Int:
		return x.String(), nil
	case duckdb.Decimal:
		return x.String(), nil
	}
	return fmt.Sprint(v), nil
}

// ---------------------------------------------------------------- comparison

// compare returns "" when want (DuckDB) and got (nicflow) hold the same
// rows (in order when ordered, else as multisets), else the first
// difference.
func compare(want, got []string, ordered bool) string {
	w, g := want, got
	if !ordered {
		w, g = slices.Clone(want), slices.Clone(got)
		slices.Sort(w)
		slices.Sort(g)
	}
	for i := range min(len(w), len(g)) {
		if !sameRow(w[i], g[i]) {
			return fmt.Sprintf("row %d: nicflow %q, DuckDB %q", i+1, g[i], w[i])
		}
	}
	if len(w) != len(g) {
		return fmt.Sprintf("%d rows, DuckDB %d (first extra rows: nicflow %q, DuckDB %q)", len(g), len(w), head(g[min(len(g), len(w)):]), head(w[min(len(g), len(w)):]))
	}
	return ""
}

// sameRow compares two rows cell by cell: text exactly, except numbers
// when one is a double ("~"): within 1e-9 relative.
func sameRow(w, g string) bool {
	if w == g {
		return true
	}
	wc, gc := strings.Split(w, "|"), strings.Split(g, "|")
	if len(wc) != len(gc) {
		return false
	}
	for i := range wc {
		if wc[i] != gc[i] && !closeNumbers(wc[i], gc[i]) {
			return false
		}
	}
	return true
}

// closeNumbers reports whether two cells are numbers within 1e-9 relative
// of each other, one of them at least a double.
func closeNumbers(a, b string) bool {
	if !strings.HasPrefix(a, "~") && !strings.HasPrefix(b, "~") {
		return false
	}
	x, err1 := strconv.ParseFloat(strings.TrimPrefix(a, "~"), 64)
	y, err2 := strconv.ParseFloat(strings.TrimPrefix(b, "~"), 64)
	if err1 != nil || err2 != nil {
		return false
	}
	if math.IsNaN(x) || math.IsNaN(y) {
		return math.IsNaN(x) && math.IsNaN(y)
	}
	return x == y || math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y))
}

func head(rows []string) []string { return rows[:min(len(rows), 3)] }
