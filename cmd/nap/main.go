// Command nap is the reference nap, in plain Go for any platform. It is the
// specification that the tiny binaries from "napctl binary" implement; see package sleeper.
package main

import (
	"os"

	"github.com/nap-k8s/nap/sleeper/spec"
)

func main() {
	os.Exit(spec.Main(os.Args[1:], os.Stdout, os.Stderr))
}
