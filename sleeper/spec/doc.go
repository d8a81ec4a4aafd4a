// Package spec is nap's specification, in plain Go with the standard library only:
// [Parse] reads the arguments, [Main] runs the whole program (it is cmd/nap, the
// reference, and the oracle every test of the tiny binaries compares against).
//
// The contract, identical on every architecture:
//
//	nap [DURATION]...
//
// With no argument nap sleeps 10s. A DURATION is a bare non-negative decimal number of
// seconds (10, 2.5, .5, 3.), one or more number+unit terms with the units ns us ms s m h
// (500ms, 1m30s, 1.5h), or inf / infinity (sleep until a signal). Several arguments are
// added up. Each term is computed exactly and rounded down to a whole nanosecond (digits
// below 1 ns are truncated); the finite arguments must add up to at most 2^63-1 ns.
//
// Arguments are read left to right. -h or --help prints the usage on stdout and exits 0
// at once. The first invalid argument (empty, signed, 10sec, 1e3, an overflowing total,
// any other flag) is reported on stderr as
//
//	nap: invalid duration "ARG"
//	nap: sleeping the default 10s
//
// and nap then sleeps the default anyway (a typo in a preStop hook must still delay the
// container's end) and exits 2. Success is silent and exits 0; a total of zero returns at
// once. With no argv at all (argc 0, which kernels before 5.18 allow), nap sleeps the
// default like with no argument.
//
// Every signal from 1 to 15 that a process can catch (SIGHUP, SIGINT, SIGQUIT, SIGTERM,
// SIGUSR1, SIGUSR2, SIGALRM, ...: the signals whose default action ends a process, so
// any a container runtime may send as its stop signal) ends any sleep at once with exit
// status 128+signal, also when nap is PID 1 of a PID namespace, where the default action
// would be dropped. Stopping and continuing the process never shortens the sleep.
//
// A failed sleep call never ends the delay early. The tiny binaries wait with nanosleep;
// if the kernel refuses it (a seccomp profile), they print Refused on stderr and wait with
// clock_nanosleep, then ppoll. If all three are refused, nap exits 1 at once (the kubelet
// reports a failed hook, with the messages) rather than pretend it waited.
package spec
