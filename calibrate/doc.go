// Package calibrate measures, on the user's own cluster, how long traffic still reaches
// a pod after its termination began, per traffic path, and recommends the preStop
// delay that covers it: it deploys napctl serve (which keeps serving through a long
// preStop hold and says, in each answer, which pod answered and how long ago its
// termination began), probes every path, deletes one pod at a time, and takes each
// path's tail as the last answer the deleted pod gave on it.
//
// One file a concern: Run (calibrate.go); its Options (options.go); what it opens to
// reach each traffic path, by the path's name (paths.go: package traffic only
// classifies); the workload it deploys (workload.go); the rounds and their
// measurement (measure.go); the recommendation from the measured tails
// (recommend.go); the Report and its JSON (report.go).
package calibrate
