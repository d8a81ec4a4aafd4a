package kube

import "time"

// The defaults, in one place.
const (
	// DefaultDelay is the preStop delay when none is given: nap's own default
	// (sleeper/nap.Default), written as nap reads it.
	DefaultDelay = "10s"
	// DefaultGracePeriod is Kubernetes' terminationGracePeriodSeconds when a pod says
	// none.
	DefaultGracePeriod = 30 * time.Second
)
