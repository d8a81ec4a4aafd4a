package e2e

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// lanesFile names the lane of make test's end-to-end tests that hack/test.sh runs apart
// from the rest: one lane and one test per line.
const lanesFile = "../../hack/e2e-lanes"

// lanes are the lanes lanesFile may name, each with its rule: what a test reaches that
// its lane forbids (none: the test may run there).
var lanes = map[string]func(funcs map[string][]*ast.FuncDecl, test string) []string{
	"early":  measures,
	"side-a": labWide,
	"side-b": labWide,
	"full":   func(map[string][]*ast.FuncDecl, string) []string { return nil },
}

// recorders are the helpers that send the traffic whose losses a test counts, or time
// a route with it: a test that reaches any of them needs the two cores to itself, or
// to share them with one other lane (doc.go).
var recorders = map[string]bool{
	"measure": true, "begin": true, "startProbe": true, "startNode2Probe": true, "startStreams": true,
	"startVegeta": true, "runCalibrate": true,
}

// labWideNames are what changes the lab beyond a test's own namespaces: nap's
// controller (its webhook and policy are every namespace's) and the disruptions of a
// node, by the names that install or choose them.
var labWideNames = map[string]string{
	"installController": "installs nap's controller, whose webhook and policy are every namespace's",
	"helmCommand":       "runs helm: nap's chart installs its controller, whose webhook and policy are every namespace's",
	"nodeDrain":         "drains node 2, under every pod there",
	"nodePressure":      "evicts pods from node 2 under disk pressure",
	"nodeShutdown":      "shuts node 2 down, under every pod there",
	"shutdownNode2":     "shuts node 2 down, under every pod there",
	"labShutdown":       "shuts node 2 down, under every pod there",
	"slowNode2Proxy":    "slows node 2's kube-proxy, every route through it",
}

// maxEarlyRate is the most requests per second an early test's own probe may send.
const maxEarlyRate = 20

// TestLanes holds hack/e2e-lanes to what its header says: each line a known lane and a
// test of this package, named once, that reaches nothing its lane forbids through the
// package's functions (by name: a method counts as every function of its name). Early:
// none of the recorders, neither napctl probe nor napctl calibrate, probes
// (probe.Options) of at most maxEarlyRate requests per second. Side: nothing of
// labWideNames, apart from the recorders' own machinery (whose disruptions are the
// scenario's). Runs without a lab.
func TestLanes(t *testing.T) {
	lines := readLanes(t)
	if len(lines) == 0 {
		t.Fatalf("%s names no test", lanesFile)
	}
	funcs := packageFuncs(t)
	seen := map[string]bool{}
	count := map[string]int{}
	for _, l := range lines {
		rule, ok := lanes[l.lane]
		if !ok {
			t.Errorf("%s:%d: no lane %q", lanesFile, l.line, l.lane)
			continue
		}
		count[l.lane]++
		if seen[l.name] {
			t.Errorf("%s:%d: %s named twice", lanesFile, l.line, l.name)
		}
		seen[l.name] = true
		if fns := funcs[l.name]; len(fns) != 1 || fns[0].Recv != nil || !strings.HasPrefix(l.name, "Test") {
			t.Errorf("%s:%d: %s is not a test of test/e2e", lanesFile, l.line, l.name)
			continue
		}
		for _, why := range rule(funcs, l.name) {
			t.Errorf("%s:%d: %s: %s: not in lane %s", lanesFile, l.line, l.name, why, l.lane)
		}
	}
	for lane := range lanes {
		if count[lane] == 0 {
			t.Errorf("%s: lane %s names no test", lanesFile, lane)
		}
	}
}

// TestLaneRules: the early lane's check finds a recorder called, a method of one, one
// called through a helper, napctl probe or calibrate run, and a probe faster than
// maxEarlyRate; the side lanes' finds the controller installed and a node's disruption
// named, in the test or a helper, but not inside the recorders; a test that reaches
// none passes.
func TestLaneRules(t *testing.T) {
	for _, tc := range []struct {
		lane string
		src  string
		want int
	}{
		{"early", `func TestA(t *testing.T) { d := measure(t, cs, sc, 200); _ = d }`, 1},
		{"early", `func TestA(t *testing.T) { tr := prepare(t, cs, sc); tr.begin(t, cs, 100) }`, 1},
		{"early", `func TestA(t *testing.T) { probe.Run(ctx, probe.Options{URL: u, Rate: 200}, f) }`, 1},
		{"early", `func TestA(t *testing.T) { probe.Run(ctx, probe.Options{URL: u, Rate: rate}, f) }`, 1},
		{"early", `func TestA(t *testing.T) { probe.Run(ctx, probe.Options{URL: u, Rate: 20}, f) }`, 0},
		{"early", `func TestA(t *testing.T) { pair(t, clusterIPNode1, rollingRestart) }`, 1},
		{"early", `func TestA(t *testing.T) { exec.Command(napctl(t), "probe", url, "--rate", "200") }`, 1},
		{"early", `func TestA(t *testing.T) { exec.Command("nsenter", "--net=x", napctl(t), "calibrate", "-n", ns) }`, 1},
		{"early", `func TestA(t *testing.T) { exec.Command(napctl(t), "inject", "--mode", "binary") }`, 0},
		{"early", `func TestA(t *testing.T) { tr := prepare(t, cs, sc); restart(t, cs, tr.ns, 0) }`, 0},
		{"side-a", `func TestA(t *testing.T) { pair(t, clusterIPNode1, rollingRestart) }`, 0},
		{"side-a", `func TestA(t *testing.T) { pair(t, lbLocal, nodeDrain) }`, 1},
		{"side-b", `func TestA(t *testing.T) { d := measure(t, cs, scenario{disruption: nodeShutdown}, 200); _ = d }`, 1},
		{"side-b", `func TestA(t *testing.T) { installController(t, cs); pair(t, clusterIPNode1, rollingRestart) }`, 1},
		{"side-b", `func TestA(t *testing.T) { withController(t) }`, 1},
		{"side-b", `func TestA(t *testing.T) { slowNode2Proxy(t, 5*time.Second) }`, 1},
		{"side-b", `func TestA(t *testing.T) { exec.Command(napctl(t), "install", "--policy", "default") }`, 1},
		{"side-b", `func TestA(t *testing.T) { helm := helmCommand(t); helm("install", "nap", chart) }`, 1},
		{"side-b", `func TestA(t *testing.T) { exec.Command(napctl(t), "probe", url, "--rate", "200") }`, 0},
		{"side-a", `func TestA(t *testing.T) { d := measure(t, cs, sc, 200); _ = d }`, 0},
		{"side-a", `func TestA(t *testing.T) { disrupt(t, cs, ns, rollingRestart, 0, nil) }`, 0},
		{"side-a", `func TestA(t *testing.T) { disrupt(t, cs, ns, nodeDrain, 0, nil) }`, 1},
		{"full", `func TestA(t *testing.T) { installController(t, cs); pair(t, lbLocal, nodeDrain) }`, 0},
	} {
		src := "package e2e\n" + tc.src + `
func pair(t *testing.T, p path, d disruption) { for _, v := range variants { m := measure(t, cs, scenario{p, d, v}, 200); _ = m } }
func prepare(t *testing.T, cs *kubernetes.Clientset, sc scenario) *trial { return &trial{sc: sc} }
func restart(t *testing.T, cs *kubernetes.Clientset, ns string, i int) {}
func withController(t *testing.T) { installController(t, client(t)) }
func measure(t *testing.T, cs *kubernetes.Clientset, sc scenario, rate float64) downtime { disrupt(t, cs, "", sc.disruption, 0, nil); return downtime{} }
func disrupt(t *testing.T, cs *kubernetes.Clientset, ns string, d disruption, i int, settle func()) { if d == nodeDrain { drain() } }
`
		f, err := parser.ParseFile(token.NewFileSet(), "a_test.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := lanes[tc.lane](funcsOf(f, nil), "TestA"); len(got) != tc.want {
			t.Errorf("%s: %s: %q, want %d findings", tc.lane, tc.src, got, tc.want)
		}
	}
}

type laneLine struct {
	lane, name string
	line       int
}

// readLanes reads hack/e2e-lanes: a lane and a test per line, # comments and blank
// lines aside.
func readLanes(t *testing.T) []laneLine {
	t.Helper()
	f, err := os.Open(lanesFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []laneLine
	sc := bufio.NewScanner(f)
	for i := 1; sc.Scan(); i++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		f := strings.Fields(s)
		if len(f) != 2 || strings.ContainsAny(f[1], "|()^$") {
			t.Errorf("%s:%d: %q is not a lane and one test's name", lanesFile, i, s)
			continue
		}
		out = append(out, laneLine{f[0], f[1], i})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// packageFuncs are this package's functions and methods by name.
func packageFuncs(t *testing.T) map[string][]*ast.FuncDecl {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*ast.FuncDecl{}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = funcsOf(f, out)
	}
	return out
}

// funcsOf adds f's functions and methods to funcs by name.
func funcsOf(f *ast.File, funcs map[string][]*ast.FuncDecl) map[string][]*ast.FuncDecl {
	if funcs == nil {
		funcs = map[string][]*ast.FuncDecl{}
	}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil {
			funcs[fn.Name.Name] = append(funcs[fn.Name.Name], fn)
		}
	}
	return funcs
}

// measures says what test reaches, through funcs, that sends the traffic a test counts:
// a recorder called (a function or a method of that name), or a probe.Options whose
// Rate is not a constant of at most maxEarlyRate; each with the path of calls to it.
func measures(funcs map[string][]*ast.FuncDecl, test string) []string {
	return reach(funcs, test, func(via string, n ast.Node) (string, bool) {
		switch n := n.(type) {
		case *ast.CallExpr:
			if name := callee(n); recorders[name] {
				return via + " → " + name, true
			} else if cmd := napctlRuns(n, "probe", "calibrate"); cmd != "" {
				return via + " runs napctl " + cmd, true
			}
		case *ast.CompositeLit:
			if fast(n) {
				return via + " probes at a rate not a constant of at most " + strconv.Itoa(maxEarlyRate) + " req/s", false
			}
		}
		return "", false
	})
}

// carriers are the harness's functions that carry out the scenario or disruption a test
// hands them: their own code names every disruption, and what they do is what the
// test's arguments say.
var carriers = map[string]bool{"disrupt": true}

// labWide says what test reaches, through funcs, of labWideNames (called or named),
// with the path of calls to it. It does not look into the recorders nor the carriers,
// only at the arguments a test hands them.
func labWide(funcs map[string][]*ast.FuncDecl, test string) []string {
	return reach(funcs, test, func(via string, n ast.Node) (string, bool) {
		if call, ok := n.(*ast.CallExpr); ok {
			if recorders[callee(call)] || carriers[callee(call)] {
				return "", true // its arguments are still read: the scenario is the test's
			}
			if napctlRuns(call, "install") != "" {
				return via + " runs napctl install: its controller's webhook and policy are every namespace's", true
			}
		}
		if id, ok := n.(*ast.Ident); ok {
			if why, ok := labWideNames[id.Name]; ok {
				return via + " → " + id.Name + ": " + why, false
			}
		}
		return "", false
	})
}

// reach walks test and the package's functions it calls (by name), breadth first, and
// returns what find says of each node, with the path of calls to it. find's stop is
// true when the call it was handed is not to be walked into.
func reach(funcs map[string][]*ast.FuncDecl, test string, find func(via string, n ast.Node) (found string, stop bool)) []string {
	var out []string
	seen := map[string]bool{test: true}
	type visit struct{ name, via string }
	queue := []visit{{test, test}}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, fn := range funcs[v.name] {
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				found, stop := find(v.via, n)
				if found != "" {
					out = append(out, found)
				}
				if call, ok := n.(*ast.CallExpr); ok && !stop {
					if name := callee(call); name != "" && !seen[name] && len(funcs[name]) > 0 {
						seen[name] = true
						queue = append(queue, visit{name, v.via + " → " + name})
					}
				}
				return true
			})
		}
	}
	return out
}

// callee is the name of the function or method call calls; "" when it is neither.
func callee(call *ast.CallExpr) string {
	switch f := call.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

// napctlRuns is which of cmds call runs when call has napctl(t) among its arguments
// and the command among its constant ones (probe and calibrate send traffic:
// calibrate probes its own pods; install installs the controller); "" otherwise.
func napctlRuns(call *ast.CallExpr, cmds ...string) string {
	var napctl bool
	var cmd string
	for _, a := range call.Args {
		switch a := a.(type) {
		case *ast.CallExpr:
			napctl = napctl || isIdent(a.Fun, "napctl")
		case *ast.BasicLit:
			if v, err := strconv.Unquote(a.Value); err == nil && slices.Contains(cmds, v) && cmd == "" {
				cmd = v
			}
		}
	}
	if !napctl {
		return ""
	}
	return cmd
}

// fast says whether lit is a probe.Options whose Rate is not a constant of at most
// maxEarlyRate.
func fast(lit *ast.CompositeLit) bool {
	sel, ok := lit.Type.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Options" || !isIdent(sel.X, "probe") {
		return false
	}
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok || !isIdent(kv.Key, "Rate") {
			continue
		}
		if b, ok := kv.Value.(*ast.BasicLit); ok {
			if r, err := strconv.ParseFloat(b.Value, 64); err == nil && r <= maxEarlyRate {
				continue
			}
		}
		return true
	}
	return false
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
