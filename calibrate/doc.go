// Package calibrate measures, on the user's own cluster, how long traffic still reaches
// a pod after its termination began, per traffic path, and recommends the preStop
// delay that covers it: it deploys napctl serve (which keeps serving through a long
// preStop hold and says, in each answer, which pod answered and how long ago its
// termination began), probes every path, deletes one pod at a time, and takes each
// path's tail as the last answer the deleted pod gave on it.
package calibrate
