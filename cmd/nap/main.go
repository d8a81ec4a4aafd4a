package main

import (
	"os"

	"github.com/nap-k8s/nap/sleeper/nap"
)

func main() {
	args := os.Args
	if len(args) > 0 { // argc may be 0 (kernels before 5.18): no argument, not a crash
		args = args[1:]
	}
	os.Exit(nap.Main(args, os.Stdout, os.Stderr))
}
