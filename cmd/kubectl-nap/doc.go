// Command kubectl-nap is napctl as a kubectl plugin: with it on PATH,
// `kubectl nap inject ...` runs `napctl inject ...`.
package main
