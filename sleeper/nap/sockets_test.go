package nap

import (
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"
)

// diagMsg is one message of a dump as the kernel writes it: a socket in state on port
// (host order), with INET_DIAG_SHUTDOWN first and then, when last >= 0, INET_DIAG_INFO
// whose tcpi_last_data_recv is last, of a connection kept (tcpi_data_segs_in KeptSegs).
func diagMsg(state byte, port uint16, last int64) []byte {
	m := make([]byte, NlmsgHdrLen+InetDiagMsgLen)
	m[NlmsgHdrLen] = 10 // AF_INET6
	m[NlmsgHdrLen+DiagMsgState] = state
	binary.BigEndian.PutUint16(m[NlmsgHdrLen+DiagMsgSport:], port)
	m = append(m, 5, 0, 8, 0, 0, 0, 0, 0) // INET_DIAG_SHUTDOWN, 1 byte, padded
	if last >= 0 {
		info := make([]byte, RtaHdrLen+232)
		binary.LittleEndian.PutUint16(info, uint16(len(info)))
		binary.LittleEndian.PutUint16(info[2:], InetDiagInfo)
		binary.LittleEndian.PutUint32(info[RtaHdrLen+TCPInfoLastDataRecv:], uint32(last))
		binary.LittleEndian.PutUint32(info[RtaHdrLen+TCPInfoDataSegsIn:], KeptSegs)
		m = append(m, info...)
	}
	binary.LittleEndian.PutUint32(m, uint32(len(m)))
	binary.LittleEndian.PutUint16(m[4:], TCPDiagGetSock)
	return m
}

func nlmsg(typ uint16, payload ...byte) []byte {
	m := make([]byte, NlmsgHdrLen, NlmsgHdrLen+len(payload))
	m = append(m, payload...)
	binary.LittleEndian.PutUint32(m, uint32(len(m)))
	binary.LittleEndian.PutUint16(m[4:], typ)
	return m
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// infoAt is where diagMsg's INET_DIAG_INFO begins.
const infoAt = NlmsgHdrLen + InetDiagMsgLen + 8

// segs is m (diagMsg's) with tcpi_data_segs_in n.
func segs(m []byte, n uint32) []byte {
	binary.LittleEndian.PutUint32(m[infoAt+RtaHdrLen+TCPInfoDataSegsIn:], n)
	return m
}

// shortInfo is m (diagMsg's) with a tcp_info of an older kernel's, cut before
// tcpi_data_segs_in.
func shortInfo(m []byte) []byte {
	binary.LittleEndian.PutUint16(m[infoAt:], RtaHdrLen+TCPInfoDataSegsIn)
	m = m[:infoAt+RtaHdrLen+TCPInfoDataSegsIn]
	binary.LittleEndian.PutUint32(m, uint32(len(m)))
	return m
}

var (
	within = ActiveWithin.Milliseconds()
	done   = nlmsg(NlmsgDone, 0, 0, 0, 0)
)

func TestSocketsRead(t *testing.T) {
	listen := diagMsg(TCPListen, 8080, 0)
	tests := []struct {
		name     string
		datagram []byte
		done, ok bool
		active   uint64
	}{
		{name: "empty", datagram: nil, ok: true},
		{name: "the end", datagram: done, done: true, ok: true},
		{name: "a listener alone", datagram: cat(listen, done), done: true, ok: true},
		{name: "inbound, data just now", datagram: cat(listen, diagMsg(TCPEstablished, 8080, 0)), ok: true, active: 1},
		{name: "inbound, data just within", datagram: cat(listen, diagMsg(TCPEstablished, 8080, within-1)), ok: true, active: 1},
		{name: "inbound, idle", datagram: cat(listen, diagMsg(TCPEstablished, 8080, within)), ok: true},
		// Its first request alone (a probe's, a new connection's): the count's to see.
		{name: "inbound, data just now, its first", datagram: cat(listen, segs(diagMsg(TCPEstablished, 8080, 0), 1)), ok: true},
		{name: "inbound, data just now, none before", datagram: cat(listen, segs(diagMsg(TCPEstablished, 8080, 0), 0)), ok: true},
		{name: "inbound, data just now, many", datagram: cat(listen, segs(diagMsg(TCPEstablished, 8080, 0), 1<<32-1)), ok: true, active: 1},
		// An older kernel's tcp_info, without tcpi_data_segs_in: every connection counts.
		{name: "inbound, data just now, an older kernel's info", datagram: cat(listen, shortInfo(segs(diagMsg(TCPEstablished, 8080, 0), 1))), ok: true, active: 1},
		{name: "inbound, idle for long", datagram: cat(listen, diagMsg(TCPEstablished, 8080, 1<<32-1)), ok: true},
		{name: "outbound: no listener on its port", datagram: cat(listen, diagMsg(TCPEstablished, 8081, 0)), ok: true},
		{name: "same low byte, other port", datagram: cat(listen, diagMsg(TCPEstablished, 8080+256, 0)), ok: true},
		{name: "listener after it: not yet known", datagram: cat(diagMsg(TCPEstablished, 8080, 0), listen), ok: true},
		{name: "several", datagram: cat(listen, diagMsg(TCPListen, 443, 0), diagMsg(TCPEstablished, 8080, 3), diagMsg(TCPEstablished, 443, 150), diagMsg(TCPEstablished, 443, 5000), diagMsg(TCPEstablished, 40000, 1), done), done: true, ok: true, active: 2},
		{name: "other states skipped", datagram: cat(listen, diagMsg(8, 8080, 0) /* CLOSE_WAIT */, diagMsg(6, 8080, -1) /* TIME_WAIT */), ok: true},
		{name: "outbound without its info: not read", datagram: cat(listen, diagMsg(TCPEstablished, 9, -1)), ok: true},
		{name: "after the end, nothing is read", datagram: cat(listen, done, diagMsg(TCPEstablished, 8080, 0)), done: true, ok: true},
		{name: "other message types skipped", datagram: cat(nlmsg(1), listen, diagMsg(TCPEstablished, 8080, 0)), ok: true, active: 1},
		{name: "an error: refused", datagram: cat(listen, nlmsg(NlmsgError, 0xf3, 0xff, 0xff, 0xff)), ok: false},
		{name: "inbound without its info", datagram: cat(listen, diagMsg(TCPEstablished, 8080, -1)), ok: false},
		{name: "a short header", datagram: cat(listen, []byte{1, 2, 3}), ok: false},
		{name: "a length below the header", datagram: func() []byte { m := nlmsg(1); m[0] = 15; return m }(), ok: false},
		{name: "a length past the datagram", datagram: func() []byte { m := nlmsg(1, 0, 0, 0, 0); m[0] = 24; return m }(), ok: false},
		{name: "a socket message too short", datagram: nlmsg(TCPDiagGetSock, make([]byte, InetDiagMsgLen-1)...), ok: false},
		{name: "an attribute past its message", datagram: func() []byte {
			m := diagMsg(TCPEstablished, 8080, 0)
			binary.LittleEndian.PutUint16(m[NlmsgHdrLen+InetDiagMsgLen:], 200)
			return cat(listen, m)
		}(), ok: false},
		{name: "an attribute shorter than its header", datagram: func() []byte {
			m := diagMsg(TCPEstablished, 8080, 0)
			binary.LittleEndian.PutUint16(m[NlmsgHdrLen+InetDiagMsgLen:], 3)
			return cat(listen, m)
		}(), ok: false},
		{name: "an info too short for the field", datagram: func() []byte {
			m := diagMsg(TCPEstablished, 8080, 0)
			info := NlmsgHdrLen + InetDiagMsgLen + 8
			binary.LittleEndian.PutUint16(m[info:], RtaHdrLen+TCPInfoLastDataRecv+3)
			return cat(listen, m[:info+RtaHdrLen+TCPInfoLastDataRecv+4])
		}(), ok: false},
		{name: "a last message unaligned", datagram: func() []byte {
			m := nlmsg(1, 7)
			return cat(listen, m)
		}(), ok: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Sockets{Within: uint64(ActiveWithin.Milliseconds())}
			done, ok := s.Read(tc.datagram)
			if done != tc.done || ok != tc.ok || (ok && s.Active != tc.active) {
				t.Errorf("Read = done %v, ok %v, active %d; want %v, %v, %d", done, ok, s.Active, tc.done, tc.ok, tc.active)
			}
		})
	}
}

// TestSocketsAcrossDatagrams: the listening ports learned from one datagram (a dump,
// or an earlier one) hold for the next.
func TestSocketsAcrossDatagrams(t *testing.T) {
	s := Sockets{Within: uint64(ActiveWithin.Milliseconds())}
	for _, d := range [][]byte{cat(diagMsg(TCPListen, 80, 0), done), cat(diagMsg(TCPListen, 65535, 0), done), cat(diagMsg(TCPEstablished, 80, 0), diagMsg(TCPEstablished, 65535, 10)), done} {
		if _, ok := s.Read(d); !ok {
			t.Fatalf("Read(%x): not ok", d)
		}
	}
	if s.Active != 2 {
		t.Errorf("active %d, want 2", s.Active)
	}
}

// TestDiagRequests: the two requests, byte for byte (struct nlmsghdr, then struct
// inet_diag_req: family, address lengths, the INFO extension, the socket id, states, dbs).
func TestDiagRequests(t *testing.T) {
	zero := func(n int) string { return strings.Repeat("00", n) }
	for i, states := range []string{"00040000", "02000000"} {
		want := "4c000000" + "1200" + "0103" + zero(8) + "000000" + "02" + zero(48) + states + zero(4)
		if got := hex.EncodeToString(DiagRequests[i][:]); got != want {
			t.Errorf("request %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func FuzzSocketsRead(f *testing.F) {
	f.Add(cat(diagMsg(TCPListen, 8080, 0), diagMsg(TCPEstablished, 8080, 0), done))
	f.Add(cat(diagMsg(TCPListen, 1, 0), diagMsg(TCPEstablished, 1, 1000), nlmsg(1, 9, 9)))
	f.Add(nlmsg(NlmsgError, 1, 2, 3, 4))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := Sockets{Within: uint64(ActiveWithin.Milliseconds())}
		done, ok := s.Read(b)
		if done && !ok {
			t.Fatal("done but not ok")
		}
		// Each counted socket is a whole message of its own.
		if max := uint64(len(b) / (NlmsgHdrLen + InetDiagMsgLen + RtaHdrLen + TCPInfoLastDataRecv + 4)); s.Active > max {
			t.Fatalf("active %d in %d bytes", s.Active, len(b))
		}
	})
}
