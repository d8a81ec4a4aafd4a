package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/prop"
)

const (
	service   = "org.freedesktop.login1"
	object    = dbus.ObjectPath("/org/freedesktop/login1")
	iface     = "org.freedesktop.login1.Manager"
	busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>custom</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`
)

func main() {
	dir := flag.String("dir", "", "where the bus's configuration and socket live")
	daemon := flag.String("dbus-daemon", "dbus-daemon", "the D-Bus daemon")
	maxDelay := flag.Duration("max-delay", 5*time.Minute, "InhibitDelayMaxUSec: longer than the kubelet's shutdownGracePeriod")
	flag.Parse()
	if *dir == "" {
		log.Fatal("logind: --dir is required")
	}
	if err := run(*dir, *daemon, *maxDelay); err != nil {
		log.Fatalf("logind: %v", err)
	}
}

// Address is the bus's address for a --dir: what DBUS_SYSTEM_BUS_ADDRESS holds for the
// kubelet.
func address(dir string) string { return "unix:path=" + filepath.Join(dir, "bus.sock") }

func run(dir, daemon string, maxDelay time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sock := filepath.Join(dir, "bus.sock")
	os.Remove(sock)
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, busConfig, sock), 0o644); err != nil {
		return err
	}
	bus := exec.Command(daemon, "--config-file="+conf, "--nofork", "--nopidfile", "--nosyslog")
	bus.Stdout, bus.Stderr = os.Stderr, os.Stderr
	bus.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := bus.Start(); err != nil {
		return fmt.Errorf("dbus-daemon: %w", err)
	}
	defer bus.Process.Kill()
	var conn *dbus.Conn
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := dbus.Connect(address(dir))
		if err == nil {
			conn = c
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the bus at %s: %w", sock, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer conn.Close()
	m := &manager{}
	if err := conn.Export(m, object, iface); err != nil {
		return err
	}
	if _, err := prop.Export(conn, object, prop.Map{iface: {
		"InhibitDelayMaxUSec": {Value: uint64(maxDelay.Microseconds()), Emit: prop.EmitFalse},
	}}); err != nil {
		return err
	}
	if reply, err := conn.RequestName(service, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		return fmt.Errorf("owning %s: %v (reply %d)", service, err, reply)
	}
	log.Printf("logind: %s owned on %s; InhibitDelayMaxUSec %v", service, address(dir), maxDelay)

	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM, syscall.SIGINT)
	exited := make(chan error, 1)
	go func() { exited <- bus.Wait() }()
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("dbus-daemon ended: %v", err)
		case s := <-sig:
			switch s {
			case syscall.SIGUSR1, syscall.SIGUSR2:
				shutdown := s == syscall.SIGUSR1
				if err := conn.Emit(object, iface+".PrepareForShutdown", shutdown); err != nil {
					log.Printf("logind: PrepareForShutdown(%v): %v", shutdown, err)
					continue
				}
				log.Printf("logind: PrepareForShutdown(%v) sent; locks held: %s", shutdown, m.held())
			default:
				log.Printf("logind: %v: ending", s)
				return nil
			}
		}
	}
}

// manager is org.freedesktop.login1.Manager, the one method the kubelet calls.
type manager struct {
	mu    sync.Mutex
	n     int
	locks map[int]string // lock number: who and why, while held
}

// Inhibit returns a lock: the read end of a pipe, which the caller holds and closes to
// release it. A goroutine logs the release (the write end then fails).
func (m *manager) Inhibit(what, who, why, mode string) (dbus.UnixFD, *dbus.Error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		return 0, dbus.MakeFailedError(err)
	}
	r, w := p[0], p[1]
	m.mu.Lock()
	m.n++
	n := m.n
	if m.locks == nil {
		m.locks = map[int]string{}
	}
	m.locks[n] = fmt.Sprintf("%s (%s, %s: %s)", who, what, mode, why)
	log.Printf("logind: lock %d taken by %s", n, m.locks[n])
	m.mu.Unlock()
	go func() {
		// godbus has sent the descriptor once Inhibit returned; then only the caller's
		// copy keeps the pipe open. A byte written fails with EPIPE once it is closed
		// (EAGAIN only says the pipe is full: still held).
		time.Sleep(2 * time.Second)
		syscall.Close(r)
		for {
			if _, err := syscall.Write(w, []byte{0}); err == syscall.EPIPE {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		syscall.Close(w)
		m.mu.Lock()
		delete(m.locks, n)
		m.mu.Unlock()
		log.Printf("logind: lock %d released", n)
	}()
	return dbus.UnixFD(r), nil
}

func (m *manager) held() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var s []string
	for n, l := range m.locks {
		s = append(s, fmt.Sprintf("%d %s", n, l))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "; ")
}
