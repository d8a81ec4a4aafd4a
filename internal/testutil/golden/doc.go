// Package golden is the tests' one way to compare output with a file under testdata:
// Check reports a difference, and `go test -update` rewrites the file instead (review
// the diff before committing it).
package golden
