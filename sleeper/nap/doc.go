// Package nap is nap's specification, in plain Go with the standard library only:
// [Parse] reads the arguments, [Main] runs the whole program (it is cmd/nap, the
// reference, and the oracle every test of the tiny binaries compares against).
//
// The contract, identical on every architecture:
//
//	nap [DURATION]... [--quiet QUIET] [--max MAX] [--allow N] [--requests WITHIN] [--live]
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
// # The adaptive wait
//
// Any of --quiet, --max and --requests makes the wait adaptive: it ends when the pod's
// traffic has. --allow N sets the background of either wait (below), and alone does not
// make it adaptive: nap 10 --allow 2 is a fixed delay of 10s, nap --allow 2 one of zero.
// Each flag takes the next argument as its value, a finite DURATION (a flag given again
// replaces its value; a flag with no value, or a value that is not a finite DURATION, is
// invalid as above). The flags not given take their defaults: QUIET 2s, MAX 60s, N 0,
// WITHIN 0 (off). MIN is the sum of the DURATIONs, 0 when there is none. N is read as seconds and its whole part counts (--allow 3 is 3). WITHIN is
// read in whole milliseconds (the kernel's unit): under 1ms it is off.
//
// Quiet means no new connection, and with --requests no request on an open one either.
// Two signals tell it, both of nap's network namespace (for a preStop exec hook, the
// pod's, whatever container nap runs in):
//
//   - New connections: the kernel's count of TCP connections accepted (PassiveOpens in
//     /proc/net/snmp; see [PassiveOpens]). Routing decides new connections, so they tell
//     that no route sends to the pod any more.
//   - Requests on open connections (the request signal, with --requests): what the
//     kernel keeps per TCP socket (see below). A client that pools its connections (an
//     L7 load balancer with the pods as targets, an ingress's upstream keep-alive, a
//     mesh) sends its requests over connections it opened before, and stops only when
//     it learns of the pod's removal, late. It is off unless asked for: a client that
//     pins its connection to the pod (through kube-proxy or an L4 load balancer, with
//     keep-alive) sends over it until the app closes it, after the wait; with the
//     request signal such a pod would wait until MAX.
//
// nap reads the count at its start and then again each time it has slept 100 ms
// (PollInterval), or what is left to its limit if less: its clock is the sleeps, the
// k-th reading at k×100 ms (a little later in fact, never earlier). A quiet window
// begins at the start. At each reading:
//
//  1. if the count rose by more than N since its baseline (or went back), a new
//     window begins there; the baseline is the count when the window began, taken
//     again each QUIET the window goes on without traffic, so that N is the background
//     of any QUIET however long the wait (a probe every second for a 10 s delay opens
//     ten connections, never more than N in one QUIET);
//  2. otherwise, with --requests, at every [SocketsEvery]-th reading (every 500 ms) and
//     whenever the window is QUIET long and MIN has passed, nap reads the sockets: if an
//     inbound connection received data less than WITHIN before, a new window begins
//     there ([ActiveWithin], 1 s, is the WITHIN to use: two readings of the sockets);
//  3. otherwise, once the window is QUIET long and MIN has passed, nap exits 0.
//
// It exits 0 at MAX at the latest, but never before MIN. So a pod behind a pool waits
// until its last request plus at most WITHIN plus QUIET.
//
// A fixed delay (DURATIONs and no flag, the default, or the default after an invalid
// argument) reads the count and the sockets the same way, as an adaptive wait whose MAX
// is 0 (so that it ends at MIN, the delay, whatever it sees), with QUIET 2s, its own N
// and the request signal at [ActiveWithin]: the delay does not change, only what nap
// knows at its end (requests over connections the pod accepted earlier, which no count
// of new connections shows), and its exit status stays 0 (or 2). Its N is what keeps the kubelet's probes from reading as
// traffic in its verdict. A total of zero returns at once and reads nothing; inf
// reads nothing either.
//
// N is the background on new connections: the connections a pod accepts whatever routes
// send it, per QUIET — the kubelet's HTTP, TCP and gRPC probes, each a new connection
// from the node — which must neither keep the wait open nor, below N, end it early.
// Traffic sparser than N per QUIET cannot be told from them: MIN covers what it must.
// Background on kept connections (a metrics scrape, a load balancer's health check, a
// keepalive PING) begins a new window each time it comes: it cannot hold the wait open
// while it comes less often than QUIET plus WITHIN, which they must leave room for. An
// idle pooled connection, its TCP keepalive probes and ACKs, add nothing.
//
// # The request signal
//
// The sockets are read over NETLINK_SOCK_DIAG ([ReadSockets], [Sockets.Read]):
//
//   - A reading opens a NETLINK_SOCK_DIAG socket, writes two TCPDIAG_GETSOCK dump
//     requests, each with INET_DIAG_INFO ([DiagRequests]): the listening sockets, then
//     the established ones (IPv4 and IPv6 at once), reads each dump to NLMSG_DONE, and
//     closes the socket.
//   - An inbound connection is an established socket whose local port a listening
//     socket of the namespace has: a connection some client opened to the pod. The pod's
//     own outbound connections (to a database, an API) are not traffic to it.
//   - An inbound connection is kept once it has received data in [KeptSegs] segments
//     (tcpi_data_segs_in, where the kernel's tcp_info has it): a new connection's first
//     request (a kubelet's HTTP probe's) is the count's, not the sockets'.
//   - A kept inbound connection is active when its tcpi_last_data_recv is below WITHIN.
//     The kernel moves it only when data arrives (and at the
//     connection's start): an idle pooled connection, its TCP keepalive probes and ACKs
//     do not; a request, an HTTP/2 frame or a gRPC message does.
//
// Never shorter than promised: when /proc/net/snmp cannot be opened, read or understood
// (gVisor, a hardened /proc), at the start or at any reading, nap prints
//
//	nap: cannot read /proc/net/snmp; waiting --max
//
// on stderr, waits until MAX (never before MIN) and exits 3, so that the kubelet reports
// the hook with that message. When the sockets cannot be read (the netlink socket
// refused: gVisor, a seccomp profile, qemu-user; a write or read that fails; a dump Read
// cannot understand), it does the same with
//
//	nap: cannot read the pod's sockets; waiting --max
//
// A fixed delay that cannot read the count or the sockets says nothing and keeps its
// exit status: it still waits its delay, blind.
//
// inf makes any wait, adaptive or not, last until a signal.
//
// # The live wait
//
// A hook's arguments are decided when the pod is admitted; the routes that reach the pod,
// a stored calibration or a learned wait may change while it runs. With --live (a flag
// with no value, anywhere among the arguments) nap reads, once, when it starts, what the
// cluster says the pod's wait is now: the file LivePath (/nap/wait), which the
// controller keeps for the pod's workload and the kubelet keeps current in nap's volume.
// One read of up to LiveRead bytes; the line ([ParseLive], written by [LiveLine]) is
//
//	wait/v1 MIN QUIET MAX WITHIN
//
// each field 1 to 9 decimal digits of milliseconds, then a newline or the end of the
// text (its first NUL). MAX 0 is a fixed delay of MIN, any other an adaptive wait.
//
// The arguments are the floor: nap waits as the wait that is at least both
// ([Request.Raise]): MIN, QUIET, MAX and WITHIN the larger of the two, adaptive when
// either is (a fixed delay's arguments bring no QUIET, MAX or WITHIN of their own), and
// the arguments' ALLOW, the background of the pod's own probes, which its spec fixed
// when it was admitted. Whatever the traffic, that wait never ends before the
// arguments' would. When the
// file cannot be opened or read, or is not such a line, nap prints
//
//	nap: cannot read /nap/wait; waiting as the arguments say
//
// on stderr and waits as the arguments say, its exit status unchanged. Its verdict tells
// which (wait=live or wait=args, below). inf reads no live wait (nothing is longer), nor
// does nap after an invalid argument (it sleeps the default).
//
// # The verdict
//
// Every wait that reads (a fixed delay or an adaptive wait) says what it saw in the
// container's termination message, which the kubelet keeps in the pod's status when the
// container ends. At its start nap opens VerdictPath (/dev/termination-log) for appending
// (O_WRONLY|O_APPEND|O_CLOEXEC: never created, never truncated; when it cannot be opened
// the wait is the same, and says nothing) and writes VerdictHead, nap/v1. At its end it
// appends the rest of the line ([Verdict.Tail]):
//
//	nap/v1 quiet end=5200ms last=3100ms conns=412 total=98231 kept=2500ms
//	nap/v1 late end=10000ms last=9900ms conns=3020 total=98231 kept=0ms
//	nap/v1 held end=5000ms last=4500ms conns=0 total=98231 kept=4500ms
//	nap/v1 blind end=60000ms
//
// With --live, one more field ends the line, after the others of any kind:
// wait=live when the live wait was read, wait=args when it was not.
//
// end is the clock when the wait ended; last when the last quiet window began (the
// last reading that saw traffic; 0 when none did); conns the connections accepted from
// the start to the last reading (unsigned, wrapping); total the count at the start: what
// the pod's network namespace accepted over its life; kept the last reading that saw
// requests over connections accepted earlier, and no new connection (0 when none did, or
// the wait read no sockets). The kind:
//
//   - blind: the count or the sockets could not be read (an adaptive wait's exit 3);
//   - late: a reading saw new connections (beyond N) less than QUIET before the end:
//     routes were still opening connections to the pod when the wait gave it back to
//     its app (a fixed delay too short, an adaptive wait held to MAX), and what they
//     open once its app stops listening is refused;
//   - held: no reading saw new connections in the last QUIET, but one saw requests over
//     connections accepted earlier: a client or a proxy that keeps its connections was
//     still sending. From inside the pod the two that do so look alike: a keep-alive
//     client whose route has moved on, which the app's drain ends cleanly, and a pooling
//     load balancer that still routes to the pod, which then opens new connections and
//     is refused. The paths that reach the pod tell them apart (the controller's);
//   - quiet: otherwise: no reading saw traffic in the last QUIET, or at all.
//
// Binaries before kept wrote the line without it (and never held); a reader takes
// both.
//
// A line with its head and nothing after it is cut: the wait never ended (the kubelet
// killed it at the end of the grace period, a node shutdown's budget ran out, or a
// signal ended it). nap writes no other kind. A reader that knows the pod's age calls a
// quiet verdict sparse when the pod's traffic was too thin for quiet to mean anything
// and its wait saw no request over a kept connection ([Verdict.Sparse], [SparseBelow]).
//
// A failed sleep call never ends the delay early. The tiny binaries wait with nanosleep;
// if the kernel refuses it (a seccomp profile), they print Refused on stderr and wait with
// clock_nanosleep, then ppoll. If all three are refused, nap exits 1 at once (the kubelet
// reports a failed hook, with the messages) rather than pretend it waited.
package nap
