// Package serve is `napctl serve`: the calibration target (package serve) as a command.
package serve
