// Package sleeper is nap's tiny static binaries for amd64 and arm64, whose machine code
// is written in Go with nap's own assemblers ([Binary] emits them, [Listing] shows
// them). What they do is package spec's contract, byte for byte in behaviour: the
// tests here run every binary (arm64 under qemu-user) against the reference built from
// spec.
package sleeper
