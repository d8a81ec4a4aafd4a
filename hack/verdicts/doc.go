// Command verdicts reads the `go test -json` streams of the end-to-end tests (the files
// named, or stdin), as hack/test.sh keeps them, and writes the confusion table of nap's
// verdicts over every measurement they logged (forensic.VerdictsLine): for each row
// (path, disruption, variant), how many times it was measured, and its pods by verdict
// and by whether requests over new connections failed after their app exited; then the
// totals with the precision and recall of late. Several runs' streams give one table
// over all of them: every measurement counts, none is tried again. It exits 2 when a
// stream cannot be read or a verdicts line is damaged.
package main
