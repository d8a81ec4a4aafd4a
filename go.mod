module github.com/nap-k8s/nap

go 1.26.0

require github.com/spf13/cobra v1.10.1

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/arch v0.22.0 // indirect
)
