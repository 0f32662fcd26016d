// Package adbc tests `nicflow serve`'s Arrow Flight SQL endpoint with the
// ADBC Go Flight SQL driver (github.com/apache/arrow-adbc/go/adbc), the
// driver under Python's adbc_driver_flightsql. It is a module of its own
// because the driver pulls in dependencies the main module does not need;
// the main module never imports it. Run it with `make test-adbc`.
//
// The test builds the nicflow binary, generates TPC-H at SF 0.01 with it,
// starts `nicflow serve` as users run it, and runs the 22 TPC-H queries
// through ADBC, checking every answer; then a prepared statement with
// parameters, an update's row count, GetObjects and a login.
package adbc
