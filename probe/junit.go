package probe

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// JUnit writes s as a JUnit XML report, for CI systems that show test results: one
// test case for the failed requests (failing when more than maxFailures failed), one for
// the --during command when there was one, and the text report as the suite's output.
func JUnit(w io.Writer, s Summary, maxFailures int) error {
	var text strings.Builder
	if err := Text(&text, s); err != nil {
		return err
	}
	type failure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Body    string `xml:",chardata"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      string   `xml:"time,attr"`
		Failure   *failure `xml:"failure,omitempty"`
	}
	type suite struct {
		Name      string     `xml:"name,attr"`
		Tests     int        `xml:"tests,attr"`
		Failures  int        `xml:"failures,attr"`
		Time      string     `xml:"time,attr"`
		Cases     []testcase `xml:"testcase"`
		SystemOut string     `xml:"system-out"`
	}
	type suites struct {
		XMLName  xml.Name `xml:"testsuites"`
		Name     string   `xml:"name,attr"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Time     string   `xml:"time,attr"`
		Suites   []suite  `xml:"testsuite"`
	}
	secs := fmt.Sprintf("%.3f", s.DurationSeconds)
	requests := testcase{Name: fmt.Sprintf("at most %d failed requests: %s", maxFailures, s.URL), Classname: "napctl probe", Time: secs}
	if r := s.Streams; r != nil {
		requests.Name = fmt.Sprintf("at most %d broken streams, empty connections and lost messages: %s", maxFailures, s.URL)
		if r.Failed() > maxFailures {
			requests.Failure = &failure{Type: "broken-streams",
				Message: fmt.Sprintf("%d broken of %d ends, %d connections delivered nothing, %d messages lost; more than %d", r.Broken, r.Clean+r.Broken, r.ConnectFailed, r.Lost, maxFailures),
				Body:    text.String()}
		}
	} else if s.Total.Failed > maxFailures {
		requests.Failure = &failure{Type: "failed-requests",
			Message: fmt.Sprintf("%d of %d requests failed%s, more than %d; longest outage %.2fs", s.Total.Failed, s.Total.Requests, kindsLine(s.Total), maxFailures, s.LongestOutage),
			Body:    text.String()}
	}
	st := suite{Name: "napctl probe " + s.URL, Time: secs, Cases: []testcase{requests}, SystemOut: text.String()}
	if c := s.Command; c != nil {
		tc := testcase{Name: "command: " + c.Command, Classname: "napctl probe", Time: fmt.Sprintf("%.3f", c.Seconds)}
		if c.ExitCode != 0 {
			tc.Failure = &failure{Type: "command", Message: fmt.Sprintf("exited %d", c.ExitCode)}
		}
		st.Cases = append(st.Cases, tc)
	}
	for _, c := range st.Cases {
		st.Tests++
		if c.Failure != nil {
			st.Failures++
		}
	}
	out, err := xml.MarshalIndent(suites{Name: "napctl probe", Tests: st.Tests, Failures: st.Failures, Time: secs, Suites: []suite{st}}, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s%s\n", xml.Header, out)
	return err
}
