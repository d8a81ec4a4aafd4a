// Command nap is the reference nap, in plain Go for any platform. It is the
// specification that the tiny binaries from "napctl binary" implement; see package sleeper.
package main
