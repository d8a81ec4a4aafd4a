package e2e

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// earlyLane is the file that names the tests hack/test.sh runs beside the unit tests.
const earlyLane = "../../hack/e2e-early"

// recorders are the helpers that send the traffic whose losses a test counts, or time
// a route with it: a test that reaches any of them needs the two cores to itself
// (doc.go).
var recorders = map[string]bool{
	"measure": true, "begin": true, "startProbe": true, "startNode2Probe": true, "startStreams": true,
	"startVegeta": true, "runCalibrate": true,
}

// maxEarlyRate is the most requests per second an early test's own probe may send.
const maxEarlyRate = 20

// TestEarlyLane holds hack/e2e-early to what its header says: each line a test of this
// package that reaches none of the recorders through the package's functions (by name:
// a method counts as every function of its name), runs neither napctl probe nor napctl
// calibrate, and whose probes (probe.Options) send at most maxEarlyRate requests per
// second. Runs without a lab.
func TestEarlyLane(t *testing.T) {
	names := readEarlyLane(t)
	if len(names) == 0 {
		t.Fatalf("%s names no test", earlyLane)
	}
	funcs := packageFuncs(t)
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n.name] {
			t.Errorf("%s:%d: %s named twice", earlyLane, n.line, n.name)
		}
		seen[n.name] = true
		if fns := funcs[n.name]; len(fns) != 1 || fns[0].Recv != nil {
			t.Errorf("%s:%d: %s is not a test of test/e2e", earlyLane, n.line, n.name)
			continue
		}
		for _, why := range measures(funcs, n.name) {
			t.Errorf("%s:%d: %s: %s: it must run alone on the lab, not beside the units", earlyLane, n.line, n.name, why)
		}
	}
}

// TestEarlyLaneRejects: the check finds a recorder called, a method of one, one called
// through a helper, napctl probe or calibrate run, and a probe faster than
// maxEarlyRate; a test that reaches none passes.
func TestEarlyLaneRejects(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
	}{
		{`func TestA(t *testing.T) { d := measure(t, cs, sc, 200); _ = d }`, 1},
		{`func TestA(t *testing.T) { tr := prepare(t, cs, sc); tr.begin(t, cs, 100) }`, 1},
		{`func TestA(t *testing.T) { probe.Run(ctx, probe.Options{URL: u, Rate: 200}, f) }`, 1},
		{`func TestA(t *testing.T) { probe.Run(ctx, probe.Options{URL: u, Rate: rate}, f) }`, 1},
		{`func TestA(t *testing.T) { probe.Run(ctx, probe.Options{URL: u, Rate: 20}, f) }`, 0},
		{`func TestA(t *testing.T) { pair(t, clusterIPNode1, rollingRestart) }`, 1},
		{`func TestA(t *testing.T) { exec.Command(napctl(t), "probe", url, "--rate", "200") }`, 1},
		{`func TestA(t *testing.T) { exec.Command("nsenter", "--net=x", napctl(t), "calibrate", "-n", ns) }`, 1},
		{`func TestA(t *testing.T) { exec.Command(napctl(t), "inject", "--mode", "binary") }`, 0},
		{`func TestA(t *testing.T) { tr := prepare(t, cs, sc); restart(t, cs, tr.ns, 0) }`, 0},
	} {
		src := "package e2e\n" + tc.src + `
func pair(t *testing.T, p path, d disruption) { for _, v := range variants { m := measure(t, cs, scenario{p, d, v}, 200); _ = m } }
func prepare(t *testing.T, cs *kubernetes.Clientset, sc scenario) *trial { return &trial{sc: sc} }
func restart(t *testing.T, cs *kubernetes.Clientset, ns string, i int) {}
`
		f, err := parser.ParseFile(token.NewFileSet(), "a_test.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := measures(funcsOf(f, nil), "TestA"); len(got) != tc.want {
			t.Errorf("%s: %q, want %d findings", tc.src, got, tc.want)
		}
	}
}

type laneLine struct {
	name string
	line int
}

// readEarlyLane reads hack/e2e-early: one test per line, # comments and blank lines
// aside.
func readEarlyLane(t *testing.T) []laneLine {
	t.Helper()
	f, err := os.Open(earlyLane)
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
		if strings.ContainsAny(s, " \t|()^$") {
			t.Errorf("%s:%d: %q is not one test's name", earlyLane, i, s)
			continue
		}
		out = append(out, laneLine{s, i})
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
	var out []string
	seen := map[string]bool{test: true}
	type visit struct{ name, via string }
	queue := []visit{{test, test}}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, fn := range funcs[v.name] {
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					var name string
					switch f := n.Fun.(type) {
					case *ast.Ident:
						name = f.Name
					case *ast.SelectorExpr:
						name = f.Sel.Name
					}
					if recorders[name] {
						out = append(out, v.via+" → "+name)
					} else if cmd := napctlSends(n); cmd != "" {
						out = append(out, v.via+" runs napctl "+cmd)
					} else if name != "" && !seen[name] && len(funcs[name]) > 0 {
						seen[name] = true
						queue = append(queue, visit{name, v.via + " → " + name})
					}
				case *ast.CompositeLit:
					if fast(n) {
						out = append(out, v.via+" probes at a rate not a constant of at most "+strconv.Itoa(maxEarlyRate)+" req/s")
					}
				}
				return true
			})
		}
	}
	return out
}

// napctlSends is the napctl command call runs that sends traffic ("probe" or
// "calibrate": calibrate probes its own pods), when call has napctl(t) among its
// arguments; "" otherwise.
func napctlSends(call *ast.CallExpr) string {
	var napctl bool
	var cmd string
	for _, a := range call.Args {
		switch a := a.(type) {
		case *ast.CallExpr:
			napctl = napctl || isIdent(a.Fun, "napctl")
		case *ast.BasicLit:
			if v, err := strconv.Unquote(a.Value); err == nil && (v == "probe" || v == "calibrate") && cmd == "" {
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
