package main

import (
	"os"

	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/internal/cli/app"
)

func main() {
	os.Exit(app.Run(cli.StdStreams(), os.Args[1:]))
}
