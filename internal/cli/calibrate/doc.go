// Package calibrate is "napctl calibrate": package calibrate's measurement as a command,
// with its report in text or JSON.
package calibrate
