package nap

import "encoding/binary"

// The request signal: what the kernel keeps per TCP socket of nap's network namespace,
// read over NETLINK_SOCK_DIAG (see "The request signal" in the package documentation).
// These are its rules, which Main follows and the binaries are held to; the binaries
// use the numbers below.
const (
	// SocketsEvery is how often the wait is to read the sockets: every fifth reading,
	// 500 ms. One reading walks the kernel's table of every socket of the machine
	// (BenchmarkReadSockets): ten a second would cost a waiting pod 1.5 to 5% of a core.
	SocketsEvery = 5
	// ActiveWithin is the --requests WITHIN nap's docs recommend: an inbound connection
	// is active at a reading of the sockets when the kernel says it last received data
	// (tcp_info's tcpi_last_data_recv, in milliseconds) less than WITHIN before; two
	// readings of the sockets, so that data that arrives just after one is seen at the
	// next even when that one is late.
	ActiveWithin = 2 * SocketsEvery * PollInterval
	// DiagRead is the buffer one read of the netlink socket gets: the kernel's largest
	// dump datagram (32 KiB, SKB_WITH_OVERHEAD(32768)), so that no read is truncated.
	DiagRead = 32768
	// DiagRequestLen is the length of one dump request: a struct nlmsghdr (16 bytes) and
	// a struct inet_diag_req (60).
	DiagRequestLen = 76
)

// The kernel's numbers the request signal uses (linux/sock_diag.h, linux/inet_diag.h,
// linux/tcp.h, linux/netlink.h).
const (
	NetlinkSockDiag     = 4  // NETLINK_SOCK_DIAG
	TCPDiagGetSock      = 18 // TCPDIAG_GETSOCK: both families in one walk of the tables
	NlmsgError          = 2  // NLMSG_ERROR
	NlmsgDone           = 3  // NLMSG_DONE
	NlmFRequestDump     = 0x301
	InetDiagInfo        = 2  // INET_DIAG_INFO: the attribute that holds struct tcp_info
	TCPEstablished      = 1  // TCP_ESTABLISHED
	TCPListen           = 10 // TCP_LISTEN
	NlmsgHdrLen         = 16 // struct nlmsghdr
	InetDiagMsgLen      = 72 // struct inet_diag_msg
	TCPInfoLastDataRecv = 52 // offsetof(struct tcp_info, tcpi_last_data_recv)
	// TCPInfoDataSegsIn is offsetof(struct tcp_info, tcpi_data_segs_in), Linux 4.6+: the
	// segments with data the connection received over its life. A connection counts in
	// Active only from its second (KeptSegs): its first request is a new connection's,
	// which the count of new connections already sees (and ALLOW, the kubelet's probes,
	// one request each, leaves out). An older kernel's shorter tcp_info counts each.
	TCPInfoDataSegsIn = 152
	KeptSegs          = 2
	DiagMsgState      = 1 // offsetof(struct inet_diag_msg, idiag_state)
	DiagMsgSport      = 4 // offsetof(struct inet_diag_msg, id.idiag_sport): big-endian
	RtaHdrLen         = 4 // struct rtattr: rta_len, rta_type (16 bits each)
	// The fields of a dump request that are not zero but its header's: idiag_ext and
	// idiag_states, after the family, the prefix lengths and the 48-byte socket id.
	DiagReqExt    = NlmsgHdrLen + 3
	DiagReqStates = NlmsgHdrLen + 4 + 48
)

// DiagRequests are the two dump requests of one reading, in order: the listening TCP
// sockets, then the established ones, each with INET_DIAG_INFO asked for. Every
// listening socket of the namespace is known before any established one is judged,
// whatever order the kernel dumps in.
//
// They are TCPDIAG_GETSOCK requests (struct inet_diag_req), which dump IPv4 and IPv6
// sockets at once: the kernel walks its table of established sockets, one for every
// network namespace of the machine (262,144 buckets on a 24 GiB machine), once for the
// request; SOCK_DIAG_BY_FAMILY would walk it once per family, twice the CPU.
var DiagRequests = func() [2][DiagRequestLen]byte {
	var reqs [2][DiagRequestLen]byte
	for i, states := range []uint32{1 << TCPListen, 1 << TCPEstablished} {
		q := &reqs[i]
		binary.LittleEndian.PutUint32(q[0:], DiagRequestLen)
		binary.LittleEndian.PutUint16(q[4:], TCPDiagGetSock)
		binary.LittleEndian.PutUint16(q[6:], NlmFRequestDump)
		q[DiagReqExt] = 1 << (InetDiagInfo - 1) // the family (0) is not read
		binary.LittleEndian.PutUint32(q[DiagReqStates:], states)
	}
	return reqs
}()

// Sockets is what one reading learns from the dumps, fed to it datagram by datagram in
// the order of DiagRequests.
type Sockets struct {
	// listening: one bit per local port some listening socket has (the port as the
	// kernel gives it, big-endian).
	listening [1 << 16 / 64]uint64
	// Within is WITHIN in milliseconds: an inbound connection received data less than
	// this before, or it is idle.
	Within uint64
	// Active is the number of inbound connections that received data less than Within
	// before: established sockets whose local port is a listening port.
	Active uint64
}

// Read reads one datagram of a dump. done is true once it holds NLMSG_DONE, the dump's
// end (what follows it is not read). ok is false when the dump cannot be understood:
//   - a message shorter than its header, or longer than what is left of the datagram;
//   - an NLMSG_ERROR (the kernel refused the request);
//   - a socket message (TCPDIAG_GETSOCK) shorter than a header and an inet_diag_msg;
//   - an established socket on a listening port whose attributes run past the message,
//     or hold no INET_DIAG_INFO long enough for tcpi_last_data_recv.
//
// Messages are 4-byte aligned. Messages of other types, and sockets in other states,
// are skipped. A listening socket's port is marked listening; an established socket on
// a listening port counts in Active when tcpi_last_data_recv < Within and it has
// received data in KeptSegs segments or more (tcpi_data_segs_in, where the kernel's
// tcp_info has it): a connection kept for more than one request.
func (s *Sockets) Read(datagram []byte) (done, ok bool) {
	for b := datagram; len(b) > 0; {
		if len(b) < NlmsgHdrLen {
			return false, false
		}
		n := binary.LittleEndian.Uint32(b)
		if n < NlmsgHdrLen || uint64(n) > uint64(len(b)) {
			return false, false
		}
		switch binary.LittleEndian.Uint16(b[4:]) {
		case NlmsgDone:
			return true, true
		case NlmsgError:
			return false, false
		case TCPDiagGetSock:
			if n < NlmsgHdrLen+InetDiagMsgLen {
				return false, false
			}
			if !s.socket(b[NlmsgHdrLen:n]) {
				return false, false
			}
		}
		b = b[min(uint64(len(b)), (uint64(n)+3)&^3):]
	}
	return false, true
}

// socket reads one inet_diag_msg and its attributes.
func (s *Sockets) socket(m []byte) bool {
	port := uint16(m[DiagMsgSport]) | uint16(m[DiagMsgSport+1])<<8 // as the kernel gives it
	word, bit := port/64, uint64(1)<<(port%64)
	switch m[DiagMsgState] {
	case TCPListen:
		s.listening[word] |= bit
		return true
	case TCPEstablished:
		if s.listening[word]&bit == 0 {
			return true // outbound: the pod's own connection to somewhere
		}
	default:
		return true
	}
	for a := m[InetDiagMsgLen:]; len(a) > 0; {
		if len(a) < RtaHdrLen {
			return false
		}
		n := binary.LittleEndian.Uint16(a)
		if n < RtaHdrLen || int(n) > len(a) {
			return false
		}
		if binary.LittleEndian.Uint16(a[2:]) == InetDiagInfo && n >= RtaHdrLen+TCPInfoLastDataRecv+4 {
			kept := n < RtaHdrLen+TCPInfoDataSegsIn+4 || binary.LittleEndian.Uint32(a[RtaHdrLen+TCPInfoDataSegsIn:]) >= KeptSegs
			if kept && uint64(binary.LittleEndian.Uint32(a[RtaHdrLen+TCPInfoLastDataRecv:])) < s.Within {
				s.Active++
			}
			return true
		}
		a = a[min(len(a), (int(n)+3)&^3):]
	}
	return false
}
