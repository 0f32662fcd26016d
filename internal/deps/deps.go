// Package deps pins the third-party modules the project has agreed to use,
// so that `go mod tidy` keeps them while the packages that use them are
// written. Delete an import here once real code imports the module.
package deps

import (
	_ "github.com/apache/arrow-go/v18/arrow/flight"
	_ "github.com/apache/arrow-go/v18/arrow/ipc"
	_ "github.com/apache/arrow-go/v18/parquet/pqarrow"
	_ "github.com/cockroachdb/pebble/v2"
	_ "github.com/hashicorp/memberlist"
	_ "github.com/klauspost/compress/s2"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/vbauerster/mpb/v8"
	_ "github.com/zeebo/xxh3"
	_ "golang.org/x/term"
)
