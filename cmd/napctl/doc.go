// Command napctl is nap's command-line tool: the sleeper binary and its ConfigMap,
// preStop injection, linting, downtime probing, and the in-cluster controller.
package main
