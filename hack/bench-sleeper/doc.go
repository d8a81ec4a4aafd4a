// Command bench-sleeper is `make bench` for the sleeper: it prints a Markdown report of
// each implementation's size, exec-to-exit time of `nap 0`, overshoot of a 200 ms
// sleep, and peak RSS. The reference is built from cmd/nap; the tiny binaries come from
// package sleeper; a binary for another architecture runs under qemu-user.
package main
