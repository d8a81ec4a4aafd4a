// Command e2etimes reads `go test -json` on stdin, as hack/test.sh runs the end-to-end
// tests, and writes what a CI log needs: each test's end as it comes (--- PASS: TestX
// (12.34s)), the whole output of each test that failed, the package's own lines, and at
// the end every top-level test by the time it took, longest first, with their sum: the
// breakdown of the suite's time. It exits 1 when a test or the package failed, or when
// it read no test at all.
package main
