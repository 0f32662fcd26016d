package main

import (
	"fmt"
	"os"

	"github.com/nicflow/nicflow/storage"
)

// reportRecovered tells the user about files a crashed load left behind
// that opening the catalog removed.
func reportRecovered(db *storage.DB) {
	if len(db.Recovered) == 0 {
		return
	}
	fmt.Fprintf(os.Stderr, "nicflow: removed %d file(s) left by an interrupted load or drop in %s:\n", len(db.Recovered), db.Dir())
	for i, p := range db.Recovered {
		if i == 10 {
			fmt.Fprintf(os.Stderr, "  ... and %d more\n", len(db.Recovered)-10)
			break
		}
		fmt.Fprintf(os.Stderr, "  %s\n", p)
	}
}
